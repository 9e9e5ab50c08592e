// Documents of many files as one stream, cut into batches that cross file boundaries: a corpus
// of small files (one document each) still fills every batch, so the threads stay busy.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/ingest.h"

namespace sixnd::data {

// What reading one file found; error is set when it was skipped (OnError::skip).
struct FileScan {
    std::string format;
    uint64_t bytes = 0, hash = 0, broken_lines = 0;
    std::string error;
};

class DocStream {
public:
    // Streams the files whose wanted flag is set (all when wanted is empty), in order.
    DocStream(const std::vector<std::string>& paths, const IngestOptions& opts, std::vector<bool> wanted = {});

    // Replaces texts/file_of with the next documents (up to max_docs or about max_bytes); false
    // at the end of the last file. With OnError::fail a bad file throws; with skip it is
    // recorded in scans() and the stream goes on (documents it already gave stay given: the
    // caller withdraws them).
    bool next_batch(std::vector<std::string>& texts, std::vector<uint32_t>& file_of, size_t max_docs, size_t max_bytes);

    const std::vector<FileScan>& scans() const { return scans_; }

private:
    bool open_next();

    const std::vector<std::string>& paths_;
    IngestOptions opts_;
    std::vector<bool> wanted_;
    std::vector<FileScan> scans_;
    size_t file_ = 0;
    std::unique_ptr<DocReader> reader_;
};

}  // namespace sixnd::data
