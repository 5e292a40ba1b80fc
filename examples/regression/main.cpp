// Regression through the Learner: an MLP predicts disease progression from scikit-learn's diabetes
// table (442 patients, 10 features; Efron et al. 2004), trained on 80% of the rows and scored on the
// held-out 20% with RMSE, MAE and R² in the target's own units, against a linear-regression
// baseline fitted in closed form on the same rows. This is issue 29's csv_regression example: a
// CSV table read into a dataset of our own Sample rows, with a batcher of our own.
//
//   ./build/examples/regression [--epochs N] [--batch-size N] [--lr X] [--data DIR] [--verbose]
//
// Progress shows on the dashboard on a terminal, else one line per epoch (--verbose: more).
//
// The table ships with Debian's python3-sklearn under /usr/lib/python3/dist-packages/sklearn/
// datasets/data (diabetes_data_raw.csv.gz: raw features, space separated; diabetes_target.csv.gz).
// Features and targets are standardised with the training rows' mean and deviation; the loss is
// the MSE of the standardised target, while the step outputs are scaled back so the metrics read in
// the original units. The last line is "test rmse: X  linear baseline: Y" (examples/regression/README.md).
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/train/learner.hpp>
#include <ember/train/metrics.hpp>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../common/args.hpp"

using namespace ember;

constexpr int64_t kFeatures = 10;

struct Args {
  std::string data = "/usr/lib/python3/dist-packages/sklearn/datasets/data";
  int64_t epochs = 40, batch_size = 32;
  double lr = 3e-3;
  bool verbose = false;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("regression", argc, argv);
  while (r.next()) {
    if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--data"))
      a.data = r.value();
    else if (r.is("--verbose"))
      a.verbose = true;
    else
      r.unknown("--epochs, --batch-size, --lr, --data, --verbose");
  }
  return a;
}

// All numbers of a gzip-compressed text file.
std::vector<double> read_numbers_gz(const std::string& path) {
  EMBER_CHECK(std::filesystem::exists(path), "regression: ", path,
              " not found; it ships with the Debian package python3-sklearn (apt-get install python3-sklearn, "
              "or scripts/install-deps.sh), or pass --data DIR");
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "regression: cannot open ", path);
  std::string text;
  char buf[1 << 14];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  gzclose(f);
  std::istringstream in(text);
  std::vector<double> out;
  for (double x; in >> x;) out.push_back(x);
  EMBER_CHECK(in.eof(), "regression: ", path, " holds something other than numbers");
  return out;
}

struct Sample {
  std::array<float, kFeatures> x;
  float y;
};
struct Batch {
  DynTensor x;  // [n, 10], standardised
  DynTensor y;  // [n, 1], in the target's units
};

// The baseline: ordinary least squares on the same standardised features plus an intercept,
// fitted in closed form by solving the normal equations (X^T X) w = X^T y by Gaussian elimination
// with partial pivoting. Returns the kFeatures weights followed by the intercept.
std::vector<double> fit_linear(const std::vector<Sample>& rows) {
  constexpr size_t k = kFeatures + 1;
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0.0));  // [X^T X | X^T y]
  for (const Sample& s : rows) {
    std::array<double, k> x{};
    for (size_t j = 0; j < size_t(kFeatures); ++j) x[j] = s.x[j];
    x[kFeatures] = 1;
    for (size_t r = 0; r < k; ++r) {
      for (size_t c = 0; c < k; ++c) a[r][c] += x[r] * x[c];
      a[r][k] += x[r] * s.y;
    }
  }
  for (size_t col = 0; col < k; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < k; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    std::swap(a[col], a[pivot]);
    EMBER_CHECK(std::fabs(a[col][col]) > 1e-12, "regression: the features are linearly dependent");
    for (size_t r = 0; r < k; ++r)
      if (r != col) {
        const double f = a[r][col] / a[col][col];
        for (size_t c = col; c <= k; ++c) a[r][c] -= f * a[col][c];
      }
  }
  std::vector<double> w(k);
  for (size_t r = 0; r < k; ++r) w[r] = a[r][k] / a[r][r];
  return w;
}

double linear_rmse(const std::vector<double>& w, const std::vector<Sample>& rows) {
  double sum = 0;
  for (const Sample& s : rows) {
    double pred = w[kFeatures];
    for (size_t j = 0; j < size_t(kFeatures); ++j) pred += w[j] * s.x[j];
    sum += (pred - s.y) * (pred - s.y);
  }
  return std::sqrt(sum / double(rows.size()));
}

struct Mlp {
  nn::Linear fc1, fc2, fc3;
  EMBER_MODULE(fc1, fc2, fc3)
  DynTensor forward(const DynTensor& x) const {  // a standardised target
    return fc3.forward(relu(fc2.forward(relu(fc1.forward(x)))));
  }
};

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  std::vector<double> features = read_numbers_gz(args.data + "/diabetes_data_raw.csv.gz");
  std::vector<double> target = read_numbers_gz(args.data + "/diabetes_target.csv.gz");
  const size_t rows = target.size();
  EMBER_CHECK(rows > 10 && features.size() == rows * kFeatures, "regression: ", features.size(), " feature values for ",
              rows, " targets; expected ", kFeatures, " per row");

  // A fixed 80/20 split, and standardisation with the training rows' statistics.
  std::vector<size_t> order(rows);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  const size_t n_train = rows * 4 / 5;
  std::array<double, kFeatures + 1> mean{}, dev{};
  for (size_t i = 0; i < n_train; ++i)
    for (int64_t j = 0; j <= kFeatures; ++j)
      mean[size_t(j)] += j < kFeatures ? features[order[i] * kFeatures + size_t(j)] : target[order[i]];
  for (double& m : mean) m /= double(n_train);
  for (size_t i = 0; i < n_train; ++i)
    for (int64_t j = 0; j <= kFeatures; ++j) {
      double v = j < kFeatures ? features[order[i] * kFeatures + size_t(j)] : target[order[i]];
      dev[size_t(j)] += (v - mean[size_t(j)]) * (v - mean[size_t(j)]);
    }
  for (double& d : dev) d = std::sqrt(d / double(n_train));
  const double y_mean = mean[kFeatures], y_dev = dev[kFeatures];
  std::vector<Sample> train_rows, test_rows;
  for (size_t i = 0; i < rows; ++i) {
    Sample s{};
    for (size_t j = 0; j < size_t(kFeatures); ++j)
      s.x[j] = float((features[order[i] * kFeatures + j] - mean[j]) / dev[j]);
    s.y = float(target[order[i]]);
    (i < n_train ? train_rows : test_rows).push_back(s);
  }

  Device device = Device::cpu().autodiff();
  auto batcher = [](std::vector<Sample> items, const Device& d) {
    std::vector<float> x, y;
    for (const Sample& s : items) {
      x.insert(x.end(), s.x.begin(), s.x.end());
      y.push_back(s.y);
    }
    const int64_t n = int64_t(items.size());
    return Batch{DynTensor::from_vector(x, Shape{n, kFeatures}, d), DynTensor::from_vector(y, Shape{n, 1}, d)};
  };
  auto loader = [&](std::vector<Sample> part, bool shuffle) {  // Sample and Batch deduced from the lambda
    auto b = data::DataLoaderBuilder(batcher);
    b.batch_size(size_t(args.batch_size)).device(device);
    if (shuffle) b.shuffle(42);
    return b.build(data::in_memory(std::move(part)));
  };
  auto train_loader = loader(train_rows, true);
  auto test_loader = loader(test_rows, false);

  // The loss is on the standardised target; the outputs the metrics see are in the target's units.
  auto output = [=](const Mlp& m, const Batch& b) {
    DynTensor z = m.forward(b.x);
    DynTensor loss = nn::mse_loss(z, (b.y - y_mean) / y_dev);
    return train::RegressionOutput{loss, z.detach() * y_dev + y_mean, b.y};
  };
  auto train_step = [=](Mlp& m, const Batch& b) {
    train::RegressionOutput out = output(m, b);
    Gradients grads = out.loss.backward();
    return train::TrainResult<train::RegressionOutput>{out, std::move(grads)};
  };

  device.seed(3);
  Mlp model{nn::LinearConfig{kFeatures, 32}.init(device), nn::LinearConfig{32, 16}.init(device),
            nn::LinearConfig{16, 1}.init(device)};
  auto learner =
      train::LearnerBuilder(std::move(model), train_step, output)  // Mlp and Batch deduced
          .optimizer(optim::AdamW({.weight_decay = 1e-2}))
          .scheduler(std::make_unique<optim::CosineAnnealingLR>(
              args.lr, optim::CosineAnnealingLRConfig{.t_max = args.epochs * int64_t(train_loader->num_batches())}))
          .epochs(args.epochs)              // metrics: RMSE, MAE and R², the defaults of RegressionOutput
          .verbosity(args.verbose ? 1 : 0)  // the plain renderer: a line per epoch
          .seed(42)
          .build();
  learner.fit(train_loader);
  train::EvalResult test = learner.evaluate(test_loader);
  std::printf("trained on %zu rows, tested on %zu (target mean %.1f, deviation %.1f)\n", train_rows.size(),
              test_rows.size(), y_mean, y_dev);
  std::printf("train (last epoch):");
  for (const auto& [name, v] : learner.summary().last_train)
    if (name == "rmse" || name == "mae" || name == "r2") std::printf("  %s %.4f", name.c_str(), v);
  std::printf("\n");
  std::printf("test:  %s\n", test.str().c_str());
  const std::vector<double> w = fit_linear(train_rows);
  std::printf("linear regression (closed form, same features): train rmse %.4f  test rmse %.4f\n",
              linear_rmse(w, train_rows), linear_rmse(w, test_rows));
  std::printf("test rmse: %.2f  linear baseline: %.2f\n", test.value("rmse"), linear_rmse(w, test_rows));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
