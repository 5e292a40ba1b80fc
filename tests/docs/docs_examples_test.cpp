// Every code example in ember's headers and docs compiles, and the ones marked `run` run
// (docs/testing.md, "Code examples compile"). extract_examples.py finds them and writes them
// as C++ into the build tree; the tests below build those targets with this build's flags and
// report a group's compiler errors, which point at the example's line in its header or page.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Result {
  int status = -1;
  std::string output;
};

// Runs a shell command, stdout and stderr together.
Result run(const std::string& command) {
  Result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string build_command(const std::vector<std::string>& targets) {
  std::string cmd = quoted(EMBER_CMAKE) + " --build " + quoted(EMBER_BINARY_DIR);
  for (const std::string& t : targets) cmd += " --target " + t;
  return cmd + " -j " + std::to_string(std::max(1u, std::thread::hardware_concurrency()));
}

// The compiler's report, less ninja's progress lines; the end of it when it is long.
std::string errors_of(const std::string& output) {
  std::istringstream in(output);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("[", 0) != 0) out += line + "\n";
  const size_t limit = 12000;
  return out.size() > limit ? "...\n" + out.substr(out.size() - limit) : out;
}

std::vector<std::string> groups() {
  std::vector<std::string> out;
  std::istringstream in(EMBER_DOCEX_TARGETS);
  std::string t;
  while (std::getline(in, t, ',')) out.push_back(t);
  return out;
}

class DocExamples : public ::testing::TestWithParam<std::string> {
 protected:
  // All groups and the runner at once, on every core; the tests then look at each target.
  static void SetUpTestSuite() {
    std::vector<std::string> targets = groups();
    targets.push_back("ember_docex_run");
    run(build_command(targets));
  }
};

}  // namespace

std::string extractor() {
  return std::string(EMBER_PYTHON) + " " + quoted(std::string(EMBER_SOURCE_DIR) + "/tests/docs/extract_examples.py");
}

// The extractor finds no ambiguous or malformed block (it prints file:line for each).
TEST(DocExamplesExtract, NoProblems) {
  Result r = run(extractor() + " " + quoted(EMBER_SOURCE_DIR) + " --check " + EMBER_DOCEX_FLAGS);
  EXPECT_EQ(r.status, 0) << r.output;
  std::cout << r.output;
  EXPECT_NE(r.output.find(" found ("), std::string::npos) << r.output;
}

// The convention on a made-up header and page: what is an example, a table, a problem.
TEST(DocExamplesExtract, SelfTest) {
  Result r = run(extractor() + " --self-test");
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST_P(DocExamples, Compile) {
  Result r = run(build_command({GetParam()}));
  EXPECT_EQ(r.status, 0) << "the examples of " << GetParam() << " do not compile:\n" << errors_of(r.output);
}

INSTANTIATE_TEST_SUITE_P(Groups, DocExamples, ::testing::ValuesIn(groups()),
                         [](const auto& info) { return info.param.substr(std::string("ember_docex_").size()); });

// The examples marked `run`, in a scratch folder (they may write files).
TEST(DocExamplesRun, RunnableExamplesRun) {
  Result built = run(build_command({"ember_docex_run"}));
  ASSERT_EQ(built.status, 0) << "the runnable examples do not compile:\n" << errors_of(built.output);
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ember_docex_run_" + std::to_string(getpid()));
  fs::create_directories(dir);
  Result r = run("cd " + quoted(dir.string()) + " && " + quoted(EMBER_DOCEX_RUN));
  fs::remove_all(dir);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
  std::cout << r.output.substr(
      r.output.rfind("doc examples run:") == std::string::npos ? 0 : r.output.rfind("doc examples run:"));
}
