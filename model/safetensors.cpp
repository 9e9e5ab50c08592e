#include "model/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/bf16.h"
#include "core/error.h"
#include "core/printable.h"

namespace sixnd {

namespace {

// The reference implementation refuses larger headers; a real one is a few MB at most.
constexpr uint64_t kMaxHeader = 100ull << 20;

// IEEE half -> float, exact (subnormals, Inf and NaN included).
float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const int exp = (h >> 10) & 0x1f;
    const uint32_t mant = h & 0x3ffu;
    float mag;
    if (exp == 0) mag = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31) mag = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else mag = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
    uint32_t u;
    std::memcpy(&u, &mag, 4);
    u |= sign;
    std::memcpy(&mag, &u, 4);
    return mag;
}

// A name from the file as a message quotes it: a zero byte (JSON's \u0000) would end the
// message where it is printed, and a megabyte-long name would be the whole line.
std::string quoted(const std::string& name) { return printable(excerpt(name, 120)); }

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

}  // namespace

size_t StTensor::numel() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

size_t st_dtype_size(const std::string& d) {
    static const std::map<std::string, size_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4},  {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
    auto it = sizes.find(d);
    return it == sizes.end() ? 0 : it->second;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path), file_(nullptr, &std::fclose) {
    // Checked before opening: opening a FIFO waits for a writer that may never come.
    struct stat pre {};
    if (stat(path.c_str(), &pre) == 0 && !S_ISREG(pre.st_mode)) throw Error(path, "not a regular file");
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) throw Error(path, std::string("cannot open safetensors file: ") + std::strerror(errno));
    FILE* f = file_.get();
    struct stat st {};
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) throw Error(path, "not a regular file");
    if (fseeko(f, 0, SEEK_END) != 0) throw Error(path, "cannot seek in the file");
    const uint64_t file_size = static_cast<uint64_t>(ftello(f));
    fseeko(f, 0, SEEK_SET);
    unsigned char len_bytes[8];
    if (file_size < 8 || std::fread(len_bytes, 1, 8, f) != 8)
        throw Error(path, "truncated safetensors file: " + std::to_string(file_size) +
                              " bytes, shorter than the 8-byte header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len_bytes[i];
    if (n > kMaxHeader)
        throw Error(path, "corrupt safetensors header: its length field says " + std::to_string(n) +
                              " bytes (more than 100 MiB)");
    if (n > file_size - 8)
        throw Error(path, "truncated safetensors file: the header length is " + std::to_string(n) +
                              " bytes but only " + std::to_string(file_size - 8) + " follow");
    std::string text(n, '\0');
    if (n && std::fread(text.data(), 1, n, f) != n) throw Error(path, "read failed in the safetensors header");
    data_start_ = 8 + n;
    if (text.empty() || text[0] != '{') throw Error(path, "corrupt safetensors header: it is not a JSON object");
    // nlohmann stops at a NUL as at the end of the text, so bytes after one would go unread.
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
        throw Error(path, "corrupt safetensors header: a NUL byte at byte " + std::to_string(nul) + " of " +
                              std::to_string(n) + " (JSON, padded with spaces only)");

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        // Only the position: the parser's own message quotes header bytes, which may be binary.
        throw Error(path, "corrupt safetensors header: not valid JSON (at byte " + std::to_string(e.byte) + " of " +
                              std::to_string(n) + ")");
    }
    if (!header.is_object()) throw Error(path, "corrupt safetensors header: it is not a JSON object");
    for (auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) throw Error(path, "corrupt safetensors header: __metadata__ is not an object");
            for (auto& [k, v] : entry.items()) {
                if (!v.is_string()) throw Error(path, "corrupt safetensors header: __metadata__ value of '" + quoted(k) + "' is not a string");
                metadata_[k] = v.get<std::string>();
            }
            continue;
        }
        const std::string where = "corrupt safetensors header: tensor '" + quoted(name) + "' ";
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
            throw Error(path, where + "lacks dtype, shape or data_offsets");
        StTensor t;
        t.name = name;
        const auto& dt = entry["dtype"];
        const auto& shape = entry["shape"];
        const auto& offs = entry["data_offsets"];
        if (!dt.is_string() || st_dtype_size(dt.get<std::string>()) == 0)
            throw Error(path, where + "has an unknown dtype " + dt.dump());
        t.dtype = dt.get<std::string>();
        if (!shape.is_array()) throw Error(path, where + "has a shape that is not an array");
        uint64_t bytes = st_dtype_size(t.dtype);
        for (const auto& d : shape) {
            if (!d.is_number_unsigned()) throw Error(path, where + "has a shape entry that is not a size: " + d.dump());
            const uint64_t v = d.get<uint64_t>();
            if (v > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(bytes, v, &bytes))
                throw Error(path, where + "has a shape too large to address");
            t.shape.push_back(static_cast<int64_t>(v));
        }
        if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
            throw Error(path, where + "has data_offsets that are not two byte positions");
        t.begin = offs[0].get<uint64_t>();
        t.end = offs[1].get<uint64_t>();
        if (t.end < t.begin || t.end - t.begin != bytes)
            throw Error(path, "misaligned safetensors data: tensor '" + quoted(name) + "' (" + t.dtype + " " + shape_str(t.shape) +
                                  ") needs " + std::to_string(bytes) + " bytes but its data_offsets [" +
                                  std::to_string(t.begin) + ", " + std::to_string(t.end) + ") give " +
                                  (t.end < t.begin ? std::string("a negative range") : std::to_string(t.end - t.begin)));
        tensors_.push_back(std::move(t));
    }

    // The ranges must tile the data section: each tensor starts where the one before ends.
    std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t at = 0;
    for (const StTensor& t : tensors_) {
        if (t.begin != at)
            throw Error(path, "misaligned safetensors data: tensor '" + quoted(t.name) + "' starts at byte " + std::to_string(t.begin) +
                                  " of the data but the tensors before it end at " + std::to_string(at) +
                                  (t.begin < at ? " (overlap)" : " (gap)"));
        at = t.end;
    }
    const uint64_t data_size = file_size - data_start_;
    if (at > data_size)
        throw Error(path, "truncated safetensors file: the tensors need " + std::to_string(at) + " bytes of data but only " +
                              std::to_string(data_size) + " follow the header");
    if (at < data_size)
        throw Error(path, "misaligned safetensors data: " + std::to_string(data_size - at) +
                              " bytes after the last tensor belong to none");
}

const StTensor* SafetensorsReader::find(const std::string& name) const {
    for (const StTensor& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

void SafetensorsReader::read_f32(const StTensor& t, float* dst) {
    const size_t n = t.numel();
    FILE* f = file_.get();
    if (fseeko(f, static_cast<off_t>(data_start_ + t.begin), SEEK_SET) != 0)
        throw Error(path_, "seek failed in tensor '" + t.name + "'");
    if (t.dtype == "F32") {
        if (std::fread(dst, 4, n, f) != n) throw Error(path_, "read failed in tensor '" + t.name + "'");
        return;
    }
    if (t.dtype != "F16" && t.dtype != "BF16")
        throw Error(path_, "tensor '" + t.name + "' has dtype " + t.dtype + "; only F32, F16 and BF16 can be read");
    // Converted in place from the back: element i's 2 bytes sit in the first half of dst and
    // are read before float i (at 4i >= 2i) overwrites them.
    uint16_t* half = reinterpret_cast<uint16_t*>(dst);
    if (std::fread(half, 2, n, f) != n) throw Error(path_, "read failed in tensor '" + t.name + "'");
    const bool bf = t.dtype == "BF16";
    for (size_t i = n; i-- > 0;) {
        uint16_t h;
        std::memcpy(&h, half + i, 2);
        dst[i] = bf ? bf16::to_float(h) : half_to_float(h);
    }
}

SafetensorsWriter::SafetensorsWriter(const std::string& path, const std::vector<StTensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path), file_(path), specs_(tensors) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t at = 0;
    for (const StTensorSpec& s : specs_) {
        const size_t es = st_dtype_size(s.dtype);
        if (es == 0) throw Error(path, "unknown safetensors dtype '" + s.dtype + "' for tensor '" + s.name + "'");
        uint64_t bytes = es;
        for (int64_t d : s.shape) bytes *= static_cast<uint64_t>(d);
        header[s.name] = {{"dtype", s.dtype}, {"shape", s.shape}, {"data_offsets", {at, at + bytes}}};
        at += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
    file_.write(len_bytes, 8);
    file_.write(text);
}

void SafetensorsWriter::write_next(const void* data, size_t bytes) {
    if (next_ >= specs_.size()) throw Error(path_, "more tensors written than declared");
    const StTensorSpec& s = specs_[next_];
    size_t want = st_dtype_size(s.dtype);
    for (int64_t d : s.shape) want *= static_cast<size_t>(d);
    if (bytes != want)
        throw Error(path_, "tensor '" + s.name + "' given " + std::to_string(bytes) + " bytes, its header says " + std::to_string(want));
    file_.write(data, bytes);
    next_++;
}

void SafetensorsWriter::commit() {
    if (next_ != specs_.size())
        throw Error(path_, std::to_string(specs_.size() - next_) + " declared tensors were never written");
    file_.commit();
}

}  // namespace sixnd
