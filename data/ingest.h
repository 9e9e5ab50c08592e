// Ingest: turns input files into documents. Plain text (one document per file), fortune files
// (documents separated by lines holding only "%"), and JSON Lines (one document per line, text
// in a chosen field); any of them may be gzip'd (data/byte_source.h), and a UTF-8 byte order
// mark that starts a file is dropped. Then every document is made valid UTF-8 and NFC-normalised, so later stages and
// both passes over the data see identical text.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sixnd::data {

class ByteSource;

enum class InputFormat { automatic, text, jsonl, fortune };
enum class OnError { fail, skip };
enum class InvalidUtf8 { repair, drop };

struct IngestOptions {
    InputFormat format = InputFormat::automatic;
    // "": every string of the record, a line each (evaluation files for
    // decontamination, whose text is in fields of any name: a question, its choices).
    std::string jsonl_field = "text";
    OnError on_error = OnError::fail;
    InvalidUtf8 invalid_utf8 = InvalidUtf8::repair;
    bool report_skipped_lines = true;  // false when re-reading lines an earlier pass reported
    // What the error for a broken JSONL line under OnError::fail tells the user to do about it.
    std::string broken_line_hint = "--on-error skip skips such lines";
};

InputFormat parse_format(const std::string& name);  // throws Error naming --format
const char* format_name(InputFormat f);

// The files a source pattern names: glob matches, directories walked recursively; sorted so
// that document order, and so the output, never depends on the file system's order.
std::vector<std::string> list_source_files(const std::string& pattern);

// Streams one file's documents in order. Throws Error naming the file (and line) on an
// unreadable file, corrupt gzip data or, with OnError::fail, a broken JSONL line.
class DocReader {
public:
    DocReader(const std::string& path, const IngestOptions& opts);
    ~DocReader();
    DocReader(const DocReader&) = delete;
    DocReader& operator=(const DocReader&) = delete;

    // The next document's raw text (a JSONL field's invalid UTF-8 bytes each as 0xFF, for
    // clean_text to repair or drop); false at the end of the file.
    bool next(std::string& doc);

    InputFormat format() const { return format_; }
    uint64_t bytes_read() const { return bytes_; }
    // XXH3-64 of the (decompressed) file content, complete once next() has returned false.
    uint64_t content_hash() const;
    uint64_t broken_lines() const { return broken_lines_; }

private:
    bool read_line(std::string& line);
    bool fill();
    bool next_jsonl(std::string& doc);

    std::string path_;
    IngestOptions opts_;
    InputFormat format_;
    std::unique_ptr<ByteSource> source_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    bool eof_ = false, done_ = false;
    uint64_t line_no_ = 0, bytes_ = 0, broken_lines_ = 0;
    void* hash_state_;
};

enum class CleanResult { ok, repaired, dropped };

// Repairs (U+FFFD for each invalid sequence) or drops invalid UTF-8, then NFC-normalises.
CleanResult clean_text(std::string& text, InvalidUtf8 policy);

}  // namespace sixnd::data
