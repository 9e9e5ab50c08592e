#include "data/doc_stream.h"

#include "core/error.h"
#include "core/log.h"

namespace sixnd::data {

DocStream::DocStream(const std::vector<std::string>& paths, const IngestOptions& opts, std::vector<bool> wanted)
    : paths_(paths), opts_(opts), wanted_(std::move(wanted)), scans_(paths.size()) {
    if (wanted_.empty()) wanted_.assign(paths.size(), true);
}

// Opens the next wanted file that can be opened; false when none is left.
bool DocStream::open_next() {
    for (; file_ < paths_.size(); file_++) {
        if (!wanted_[file_]) continue;
        try {
            reader_ = std::make_unique<DocReader>(paths_[file_], opts_);
            scans_[file_].format = format_name(reader_->format());
            return true;
        } catch (const Error& e) {
            if (opts_.on_error == OnError::fail) throw;
            log_warn(std::string(e.what()) + "; file skipped (--on-error skip)");
            scans_[file_].error = e.what();
        }
    }
    return false;
}

bool DocStream::next_batch(std::vector<std::string>& texts, std::vector<uint32_t>& file_of, size_t max_docs,
                           size_t max_bytes) {
    texts.clear();
    file_of.clear();
    size_t bytes = 0;
    std::string doc;
    while (texts.size() < max_docs && bytes < max_bytes) {
        if (!reader_ && !open_next()) break;
        FileScan& scan = scans_[file_];
        bool got = false;
        try {
            got = reader_->next(doc);
        } catch (const Error& e) {
            if (opts_.on_error == OnError::fail) throw;
            log_warn(std::string(e.what()) + "; file skipped (--on-error skip)");
            scan.error = e.what();
        }
        if (got) {
            bytes += doc.size();
            texts.push_back(std::move(doc));
            file_of.push_back(static_cast<uint32_t>(file_));
            continue;
        }
        if (scan.error.empty()) {
            scan.bytes = reader_->bytes_read();
            scan.hash = reader_->content_hash();
            scan.broken_lines = reader_->broken_lines();
        }
        reader_.reset();
        file_++;
    }
    return !texts.empty();
}

}  // namespace sixnd::data
