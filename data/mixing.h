// Mixing: each source has a weight, the number of times each of its kept training documents
// appears. 1 keeps a source as it is; 2.5 repeats every document twice and half of them a third
// time; 0.3 keeps 30% of them. Which documents get the fractional part is decided by a hash of
// the document and the seed, so a re-run makes the same choice.
#pragma once
#include <cstdint>
#include <string>

namespace sixnd::data {

struct SourceSpec {
    std::string name;
    std::string pattern;
    double weight = 1.0;
};

// Parses NAME=GLOB[:WEIGHT]; throws Error naming --source.
SourceSpec parse_source(const std::string& spec);

// Copies of one document in the training stream: floor(weight), plus one when the document's
// hash falls in the fractional part.
uint32_t mix_copies(double weight, uint64_t doc_hash, uint64_t seed);

// A hash in [0, 1) of a document and a seed, for choices that must repeat exactly.
double unit_hash(uint64_t doc_hash, uint64_t seed);

}  // namespace sixnd::data
