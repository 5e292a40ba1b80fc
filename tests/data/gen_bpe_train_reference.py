#!/usr/bin/env python3
"""Writes tests/data/fixtures/bpe_train_corpus.txt and bpe_train_reference.json: a seeded
pseudo-text corpus and the first merges that byte-level BPE training learns on it, computed
here the slow, obvious way (every step recounts every pair of every pre-token) so that the
incremental counts of src/data/bpe.cpp are checked against an independent implementation.
Pre-tokens come from GPT-2's regex through Python's `regex` module, as in GPT-2's encoder.py.

Rules (the ones BpeTokenizer::train documents): the most frequent adjacent pair inside a
pre-token is merged (all its occurrences, left to right); ties go to the pair whose
(left bytes, right bytes) is smallest; stop when no pair occurs min_frequency times.

  python3 tests/data/gen_bpe_train_reference.py tests/data/fixtures
Needs Python's `regex` module (Debian: python3-regex; pip: regex).
"""
import collections
import json
import random
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
MERGES = 400
MIN_FREQUENCY = 2


def corpus():
    rng = random.Random(2026)
    words = ("the of and to in is was he for it with as his on be at by had not are but from or have an they which "
             "one you were her all she there would their we him been has when who will more no if out so said what up "
             "its about into than them can only other new some could time these two may then do first any my now such "
             "like our over man me even most made after also did many before must through back years where much your "
             "way well down should because each just those people how too little state good very make world still own "
             "see men work long get here between both life being under never day same another know while last might us "
             "great old year off come since against go came right used take three café naïve Größe straße ελληνικά "
             "русский 中文 日本語 don't it's we're they've I'm you'll he'd").split()
    out = []
    for _ in range(3000):
        n = rng.randint(3, 14)
        sentence = " ".join(rng.choice(words) for _ in range(n))
        if rng.random() < 0.3:
            sentence += " " + str(rng.randint(0, 10 ** rng.randint(1, 6)))
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "!", "?", "...", ";"])
        out.append(sentence)
        out.append(rng.choice([" ", " ", " ", "\n", "\n\n", "  ", "\t"]))
    return "".join(out)


def train(text):
    counts = collections.Counter(PATTERN.findall(text))
    words = {tuple(bytes([b]) for b in piece.encode("utf-8")): n for piece, n in counts.items()}
    merges = []
    while len(merges) < MERGES:
        pairs = collections.Counter()
        for w, n in words.items():
            for i in range(len(w) - 1):
                pairs[(w[i], w[i + 1])] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p[0], p[1]))
        if pairs[best] < MIN_FREQUENCY:
            break
        merges.append(best)
        merged = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return merges


def main():
    out_dir = sys.argv[1]
    text = corpus()
    with open(f"{out_dir}/bpe_train_corpus.txt", "w", encoding="utf-8", newline="") as f:
        f.write(text)
    merges = train(text)
    with open(f"{out_dir}/bpe_train_reference.json", "w", encoding="utf-8") as f:
        # The bytes of each side as hex (tokens need not be UTF-8), one merge a line.
        lines = ",\n".join(json.dumps([a.hex(), b.hex()]) for a, b in merges)
        f.write(f'{{"generator": "tests/data/gen_bpe_train_reference.py", "min_frequency": {MIN_FREQUENCY},\n'
                f'"merges": [\n{lines}\n]}}\n')
    print(f"{len(text.encode())} bytes, {len(merges)} merges", file=sys.stderr)


if __name__ == "__main__":
    main()
