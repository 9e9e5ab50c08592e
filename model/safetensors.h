// The safetensors format (Hugging Face's tensor file), format only — no model knowledge:
//   8 bytes   N, the header length (unsigned little-endian)
//   N bytes   JSON object {name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
//             "__metadata__": {string: string}}, padded with spaces
//   the rest  the tensors' bytes, row-major little-endian; offsets count from the header's end
// The reader checks everything a hostile file could get wrong before it reads a byte of data,
// and reads one tensor at a time; the writer computes the header from the tensor list first, so
// tensors stream in one after another and no second copy of a model is ever held.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace sixnd {

struct StTensor {
    std::string name;
    std::string dtype;           // safetensors' name: F32, F16, BF16, I64, BOOL, ...
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte range in the data section
    size_t numel() const;
};

// Bytes per element of a safetensors dtype name; 0 when the name is unknown.
size_t st_dtype_size(const std::string& dtype);

class SafetensorsReader {
public:
    // Parses and checks the header: its length against the file, the JSON, each entry's dtype,
    // shape and offsets (range length = dtype size x elements), and that the ranges tile the data
    // section exactly — no gap, overlap or trailing bytes. Throws Error(path, fault).
    explicit SafetensorsReader(const std::string& path);

    const std::string& path() const { return path_; }
    const std::vector<StTensor>& tensors() const { return tensors_; }  // in data order
    const StTensor* find(const std::string& name) const;              // nullptr when absent
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Reads tensor t (F32, F16 or BF16) into dst as FP32, t.numel() values.
    void read_f32(const StTensor& t, float* dst);

private:
    std::string path_;
    std::unique_ptr<FILE, int (*)(FILE*)> file_;
    uint64_t data_start_ = 0;
    std::vector<StTensor> tensors_;
    std::map<std::string, std::string> metadata_;
};

struct StTensorSpec {
    std::string name;
    std::string dtype;  // F32 or BF16
    std::vector<int64_t> shape;
};

class SafetensorsWriter {
public:
    // Creates path (atomically: nothing appears until commit) and writes the header for these
    // tensors, padded so that the data starts at a multiple of 8 bytes.
    SafetensorsWriter(const std::string& path, const std::vector<StTensorSpec>& tensors,
                      const std::map<std::string, std::string>& metadata);
    // The next tensor's bytes, in the order given; the size must match its dtype and shape.
    void write_next(const void* data, size_t bytes);
    // Checks that every tensor was written, then renames the file into place.
    void commit();

private:
    std::string path_;
    AtomicFile file_;
    std::vector<StTensorSpec> specs_;
    size_t next_ = 0;
};

}  // namespace sixnd
