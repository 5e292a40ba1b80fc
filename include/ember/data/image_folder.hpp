// ImageFolderDataset: one class per sub-folder of a root folder, like torchvision's ImageFolder:
//   root/cat/001.png  root/cat/002.jpg  root/dog/a.jpeg   ->  classes {"cat", "dog"}, labels 0 and 1
//
//   data::ImageFolderOptions opt;
//   opt.expected_size = {{28, 28}};                       // reject images of another size
//   auto ds = std::make_shared<data::ImageFolderDataset>("root", opt);
//   data::ImageItem it = *ds->get(0);                     // u8 [C, H, W], label 0
//
// Class names are the sub-folder names sorted (byte order); files within a class are sorted
// too, so indices are stable. Images are decoded on each get() (safe from several threads;
// wrap the dataset in data::materialize to decode once). Errors name the file: a missing
// root, a root without images, a corrupt or truncated image, an image of unexpected size.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/data/dataset.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

// How ImageFolderDataset finds and decodes images.
struct ImageFolderOptions {
  ImageLayout layout = ImageLayout::chw;                            // the layout of the decoded image tensors
  int channels = 0;                                                 // 0: as stored; 1, 3 or 4: converted
  std::optional<std::pair<int64_t, int64_t>> expected_size;         // {height, width}
  std::vector<std::string> extensions = {".png", ".jpg", ".jpeg"};  // matched case-insensitively
};

// Images in root/class_name/file, labelled by the sorted index of their class folder (torchvision's
// ImageFolder). Only files directly inside a class folder, with a listed extension, are items.
class ImageFolderDataset final : public Dataset<ImageItem> {
 public:
  // Lists the files (decoding happens in get()); throws ember::Error when root is missing or not a folder,
  // has no class sub-folders or no images, or channels is not 0..4.
  explicit ImageFolderDataset(const std::string& root, ImageFolderOptions options = {});
  std::optional<ImageItem> get(size_t index) const override;
  size_t size() const override { return files_.size(); }
  // Class names (sub-folder names) in label order.
  const std::vector<std::string>& class_names() const { return classes_; }
  // The file of item `index`; throws std::out_of_range past the end.
  const std::string& path(size_t index) const { return files_.at(index).first; }
  // The label of item `index`; throws std::out_of_range past the end.
  int64_t label(size_t index) const { return files_.at(index).second; }

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::pair<std::string, int64_t>> files_;  // path, label
};

}  // namespace ember::data
