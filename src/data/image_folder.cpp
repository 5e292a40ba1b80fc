// ImageFolderDataset: lists root/<class>/<file> once, decodes on get().
#include "ember/data/image_folder.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "file_io.hpp"

namespace ember::data {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

ImageFolderDataset::ImageFolderDataset(const std::string& root, ImageFolderOptions options)
    : root_(root), options_(std::move(options)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  EMBER_CHECK(fs::exists(root, ec), "ImageFolderDataset: '", root, "' does not exist");
  EMBER_CHECK(fs::is_directory(root, ec), "ImageFolderDataset: '", root, "' is not a directory");
  EMBER_CHECK(options_.channels >= 0 && options_.channels <= 4, "ImageFolderDataset: channels must be 0..4, got ",
              options_.channels);
  std::vector<std::string> exts;
  for (const std::string& e : options_.extensions) exts.push_back(lower(e));

  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
  std::sort(classes_.begin(), classes_.end());
  EMBER_CHECK(!classes_.empty(), "ImageFolderDataset: '", root,
              "' has no class sub-folders (expected root/<class name>/<image files>)");

  for (size_t label = 0; label < classes_.size(); ++label) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / classes_[label])) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = lower(entry.path().extension().string());
      if (std::find(exts.begin(), exts.end(), ext) != exts.end()) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (std::string& f : files) files_.emplace_back(std::move(f), static_cast<int64_t>(label));
  }
  if (files_.empty()) {
    std::string list;
    for (const std::string& e : options_.extensions) list += (list.empty() ? "" : ", ") + e;
    EMBER_FAIL("ImageFolderDataset: the dataset is empty: no images (", list, ") in the ", classes_.size(),
               " class folders of '", root, "'");
  }
}

std::optional<ImageItem> ImageFolderDataset::get(size_t index) const {
  if (index >= files_.size()) return std::nullopt;
  const auto& [path, label] = files_[index];
  ImageItem item;
  item.image = read_image(path, options_.layout, options_.channels);
  item.label = label;
  item.layout = options_.layout;
  if (options_.expected_size) {
    const auto [eh, ew] = *options_.expected_size;
    EMBER_CHECK(item.height() == eh && item.width() == ew, "ImageFolderDataset: '", path, "' is ", item.height(), "x",
                item.width(), " (height x width), expected ", eh, "x", ew);
  }
  return item;
}

}  // namespace ember::data
