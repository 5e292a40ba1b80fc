// Forecasting a real time series with a multi-layer bidirectional LSTM: Seattle's daily weather,
// 2012-2015 (NOAA observations, vega-datasets' seattle-weather.csv, which Debian's
// python3-vega-datasets ships). From the last 30 days of precipitation, maximum and minimum
// temperature and wind, and the time of year, the model forecasts the maximum temperature of each
// of the next 7 days. It trains on 2012-2014 and is scored on 2015 against two naive forecasts:
// the last observed value, and the same day a year before (seasonal naive).
//
//   ./build/examples/lstm_sequence [--epochs N] [--batch-size N] [--lr X] [--hidden N] [--layers N]
//                                  [--history N] [--csv FILE]
//
// The last line is "test rmse: X  last value: Y  seasonal naive: Z" in °C over the 7 horizons
// (examples/lstm_sequence/README.md).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <iostream>
#include <numbers>
#include <string>
#include <vector>

#include "../common/args.hpp"

using namespace ember;

constexpr int64_t kHorizon = 7;   // days forecast
constexpr int64_t kFeatures = 6;  // log(1 + precipitation), temp_max, temp_min, wind, sin and cos of the day of year
constexpr int64_t kSeason = 365;  // the seasonal naive forecast's lag

struct Args {
  std::string csv = "/usr/lib/python3/dist-packages/vega_datasets/_data/seattle-weather.csv";
  int64_t epochs = 6, batch_size = 32, hidden = 32, layers = 2, history = 30;
  double lr = 3e-3;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("lstm_sequence", argc, argv);
  while (r.next()) {
    if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--hidden"))
      a.hidden = r.count();
    else if (r.is("--layers"))
      a.layers = r.count();
    else if (r.is("--history"))
      a.history = r.count();
    else if (r.is("--csv"))
      a.csv = r.value();
    else
      r.unknown("--epochs, --batch-size, --lr, --hidden, --layers, --history, --csv");
  }
  return a;
}

struct Day {
  int year = 0;
  double precipitation = 0, temp_max = 0, temp_min = 0, wind = 0;
};

// One forecast: `history` days of features before day t, the next kHorizon days' temp_max.
struct Window {
  std::vector<float> x;                 // [history, kFeatures], standardised
  std::array<float, kHorizon> target;   // (temp_max[t + h] - temp_max[t - 1]) / deviation
  std::array<double, kHorizon> truth;   // temp_max[t + h] in °C
  std::array<double, kHorizon> last;    // temp_max[t - 1]: the last-value forecast
  std::array<double, kHorizon> season;  // temp_max[t + h - 365]: the seasonal naive forecast
};
struct Batch {
  DynTensor x;  // [N, history, kFeatures]
  DynTensor y;  // [N, kHorizon]
};

// A bidirectional LSTM reads the window; the last layer's final states of both directions feed a
// linear head that forecasts the change from the last observed temperature at each horizon.
struct Forecaster {
  nn::Lstm lstm;
  nn::Linear head;
  EMBER_MODULE(lstm, head)

  DynTensor forward(const DynTensor& x) const {  // [N, L, kFeatures] -> [N, kHorizon]
    const nn::LstmOutput out = lstm.forward(x);
    const int64_t layers = lstm.config.num_layers;
    DynTensor last_layer = out.h_n.narrow(0, 2 * (layers - 1), 2);  // [2, N, H]: forward, backward
    return head.forward(flatten(transpose(last_layer, 0, 1), 1));   // [N, 2H] -> [N, kHorizon]
  }
};

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  EMBER_CHECK(std::filesystem::exists(args.csv), "lstm_sequence: ", args.csv,
              " not found; it ships with the Debian package python3-vega-datasets (apt-get install "
              "python3-vega-datasets, or scripts/install-deps.sh), or pass --csv FILE");

  // The series: one row a day, in order (date as "YYYY/MM/DD").
  auto rows = data::load_csv(args.csv, [](const data::CsvRow& r) {
    return Day{std::stoi(r.text("date").substr(0, 4)), r.real("precipitation"), r.real("temp_max"), r.real("temp_min"),
               r.real("wind")};
  });
  std::vector<Day> days;
  for (size_t i = 0; i < rows->size(); ++i) days.push_back(*rows->get(i));
  const int64_t n = int64_t(days.size());
  const int64_t test_start =
      int64_t(std::find_if(days.begin(), days.end(), [](const Day& d) { return d.year >= 2015; }) -
              days.begin());  // the first day of 2015
  EMBER_CHECK(test_start >= kSeason + args.history && test_start + kHorizon < n, "lstm_sequence: ", args.csv, " has ",
              n, " days; expected 2012-2015");

  // Features, standardised with the training years' statistics.
  std::vector<std::array<double, kFeatures>> features(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Day& d = days[size_t(i)];
    const double phase = 2 * std::numbers::pi * double(i) / 365.25;  // the series starts on 1 January
    features[size_t(i)] = {
        std::log1p(d.precipitation), d.temp_max, d.temp_min, d.wind, std::sin(phase), std::cos(phase)};
  }
  std::array<double, kFeatures> mean{}, dev{};
  for (int64_t i = 0; i < test_start; ++i)
    for (size_t j = 0; j < size_t(kFeatures); ++j) mean[j] += features[size_t(i)][j] / double(test_start);
  for (int64_t i = 0; i < test_start; ++i)
    for (size_t j = 0; j < size_t(kFeatures); ++j)
      dev[j] += std::pow(features[size_t(i)][j] - mean[j], 2) / double(test_start);
  for (double& d : dev) d = std::sqrt(d);
  const double temp_dev = dev[1];

  // Windows: training forecasts end before 2015; test forecasts are of days in 2015.
  std::vector<Window> train_windows, test_windows;
  for (int64_t t = args.history; t + kHorizon <= n; ++t) {
    const bool test = t >= test_start;
    if (!test && t + kHorizon > test_start) continue;
    if (test && t - kSeason < 0) continue;
    Window w;
    for (int64_t i = t - args.history; i < t; ++i)
      for (size_t j = 0; j < size_t(kFeatures); ++j)
        w.x.push_back(float((features[size_t(i)][j] - mean[j]) / (dev[j] > 0 ? dev[j] : 1)));
    for (int64_t h = 0; h < kHorizon; ++h) {
      w.truth[size_t(h)] = days[size_t(t + h)].temp_max;
      w.last[size_t(h)] = days[size_t(t - 1)].temp_max;
      w.season[size_t(h)] = t + h - kSeason >= 0 ? days[size_t(t + h - kSeason)].temp_max : w.last[size_t(h)];
      w.target[size_t(h)] = float((w.truth[size_t(h)] - w.last[size_t(h)]) / temp_dev);
    }
    (test ? test_windows : train_windows).push_back(std::move(w));
  }
  std::printf(
      "seattle-weather: %lld days; %zu training forecasts (2012-2014), %zu test forecasts (2015), "
      "%lld days of history, %lld days ahead\n",
      static_cast<long long>(n), train_windows.size(), test_windows.size(), static_cast<long long>(args.history),
      static_cast<long long>(kHorizon));

  Device device = Device::cpu().autodiff();
  const int64_t history = args.history;
  auto batcher = [history](std::vector<Window> items, const Device& d) {
    std::vector<float> x, y;
    for (const Window& w : items) {
      x.insert(x.end(), w.x.begin(), w.x.end());
      y.insert(y.end(), w.target.begin(), w.target.end());
    }
    const int64_t count = int64_t(items.size());
    return Batch{DynTensor::from_vector(x, Shape{count, history, kFeatures}, d),
                 DynTensor::from_vector(y, Shape{count, kHorizon}, d)};
  };
  auto train_loader = data::DataLoaderBuilder(batcher)
                          .batch_size(size_t(args.batch_size))
                          .shuffle(42)
                          .device(device)
                          .build(data::in_memory(train_windows));
  auto test_loader =
      data::DataLoaderBuilder(batcher).batch_size(512).device(device).build(data::in_memory(test_windows));

  device.seed(7);
  Forecaster model{nn::LstmConfig{.input_size = kFeatures,
                                  .hidden_size = args.hidden,
                                  .num_layers = args.layers,
                                  .batch_first = true,
                                  .dropout = 0.1,
                                  .bidirectional = true}
                       .init(device),
                   nn::LinearConfig{.in_features = 2 * args.hidden, .out_features = kHorizon}.init(device)};
  optim::Adam optimizer;
  optim::CosineAnnealingLR scheduler(args.lr, {.t_max = args.epochs * int64_t(train_loader->num_batches())});

  // The model's forecasts in °C for the test windows, in order.
  auto forecast = [&] {
    nn::set_training(model, false);
    NoGradGuard no_grad;
    std::vector<float> z;
    for (const Batch& b : *test_loader) {
      const std::vector<float> part = model.forward(b.x).to_vector<float>();
      z.insert(z.end(), part.begin(), part.end());
    }
    nn::set_training(model, true);
    std::vector<double> out(z.size());
    for (size_t i = 0; i < z.size(); ++i) out[i] = test_windows[i / kHorizon].last[0] + double(z[i]) * temp_dev;
    return out;
  };
  // RMSE over the test windows at horizon h (0-based), or over all horizons when h < 0.
  auto rmse = [&](auto&& predicted, int64_t h) {
    double sum = 0;
    int64_t count = 0;
    for (size_t i = 0; i < test_windows.size(); ++i)
      for (int64_t k = 0; k < kHorizon; ++k)
        if (h < 0 || k == h) {
          sum += std::pow(predicted(i, size_t(k)) - test_windows[i].truth[size_t(k)], 2);
          ++count;
        }
    return std::sqrt(sum / double(count));
  };
  auto last_value = [&](size_t i, size_t k) { return test_windows[i].last[k]; };
  auto seasonal = [&](size_t i, size_t k) { return test_windows[i].season[k]; };

  std::vector<double> predicted;
  auto model_forecast = [&](size_t i, size_t k) { return predicted[i * kHorizon + k]; };
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t seen = 0;
    for (const Batch& b : *train_loader) {
      DynTensor loss = nn::mse_loss(model.forward(b.x), b.y);
      auto grads = optim::GradientsParams::from(model, loss.backward());
      grads.clip_by_norm(1.0);
      model = optimizer.step(std::move(model), std::move(grads), scheduler.lr());
      scheduler.step();
      loss_sum += loss.item() * double(b.y.shape()[0]);
      seen += b.y.shape()[0];
    }
    predicted = forecast();
    std::printf("epoch %2lld/%lld  train loss %.4f  test rmse %.3f °C  %.1f s\n", static_cast<long long>(epoch),
                static_cast<long long>(args.epochs), loss_sum / double(seen), rmse(model_forecast, -1),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  std::printf("test rmse (°C) by horizon:    ");
  for (int64_t h = 0; h < kHorizon; ++h) std::printf("  +%lldd", static_cast<long long>(h + 1));
  std::printf("\n");
  for (auto [name, f] : {std::pair<const char*, std::function<double(size_t, size_t)>>{"lstm", model_forecast},
                         {"last value", last_value},
                         {"seasonal naive (a year ago)", seasonal}}) {
    std::printf("  %-27s", name);
    for (int64_t h = 0; h < kHorizon; ++h) std::printf(" %5.2f", rmse(f, h));
    std::printf("\n");
  }
  std::printf("test rmse: %.3f  last value: %.3f  seasonal naive: %.3f\n", rmse(model_forecast, -1),
              rmse(last_value, -1), rmse(seasonal, -1));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
