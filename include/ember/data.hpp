// The data layer in one include: datasets (in memory, CSV, IDX/MNIST, image folders, SQLite),
// views (map, shuffle, split, sample, concatenate, windows, augment), image transforms and the
// multi-threaded DataLoader; the byte-level BPE tokenizer.
//
//   #include <ember/data.hpp>
//   auto ds = ember::data::in_memory(std::vector<int>{1, 2, 3, 4});
//   auto parts = ember::data::split(ember::data::shuffled(ds, /*seed=*/1), {0.75, 0.25});   // train, valid
//   # run
#pragma once

#include "ember/data/bpe.hpp"
#include "ember/data/csv.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/idx.hpp"
#include "ember/data/image.hpp"
#include "ember/data/image_folder.hpp"
#include "ember/data/image_transforms.hpp"
#include "ember/data/rng.hpp"
#include "ember/data/sqlite.hpp"
#include "ember/data/views.hpp"
