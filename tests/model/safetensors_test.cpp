// The safetensors reader and writer: exact round trips for F32 and BF16, F16 decoding (normal,
// subnormal, Inf), the header padding, and one Error naming the file for every kind of damage
// (truncation, corrupt header, offsets that leave gaps, overlap or disagree with the shape).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/bf16.h"
#include "core/error.h"
#include "model/safetensors.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file from a header text and a data section, as a hostile writer would make it.
std::string raw_file(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; i++) out[i] = static_cast<char>(n >> (8 * i));
    return out + header + data;
}

std::string error_of(const std::string& path) {
    try {
        SafetensorsReader r(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Safetensors, F32AndBf16RoundTripExactly) {
    test::TempDir t("sixnd_st_");
    const std::string path = t.dir + "/m.safetensors";
    std::vector<float> a = test::random_floats(3 * 5, 1), b = test::random_floats(7, 2);
    std::vector<uint16_t> bb(b.size());
    for (size_t i = 0; i < b.size(); i++) bb[i] = bf16::from_float(b[i]);
    {
        SafetensorsWriter w(path, {{"a", "F32", {3, 5}}, {"b", "BF16", {7}}, {"empty", "F32", {0, 4}}}, {{"format", "pt"}});
        w.write_next(a.data(), a.size() * 4);
        w.write_next(bb.data(), bb.size() * 2);
        w.write_next(nullptr, 0);
        w.commit();
    }
    const std::string bytes = slurp(path);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u) << "data must start 8-byte aligned";
    EXPECT_EQ(bytes[8], '{');

    SafetensorsReader r(path);
    ASSERT_EQ(r.tensors().size(), 3u);
    EXPECT_EQ(r.metadata().at("format"), "pt");
    const StTensor* ta = r.find("a");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->shape, (std::vector<int64_t>{3, 5}));
    std::vector<float> got(ta->numel());
    r.read_f32(*ta, got.data());
    EXPECT_EQ(got, a);
    const StTensor* tb = r.find("b");
    got.assign(tb->numel(), 0.0f);
    r.read_f32(*tb, got.data());
    for (size_t i = 0; i < b.size(); i++) EXPECT_EQ(got[i], bf16::to_float(bb[i]));
    EXPECT_EQ(r.find("missing"), nullptr);
}

TEST(Safetensors, F16DecodesNormalsSubnormalsAndInf) {
    test::TempDir t("sixnd_st_");
    const std::string path = t.dir + "/h.safetensors";
    // 1.0, -2.5, 65504 (largest), 2^-24 (smallest subnormal), 3 x 2^-24, +Inf, -0
    const uint16_t h[] = {0x3c00, 0xc100, 0x7bff, 0x0001, 0x0003, 0x7c00, 0x8000};
    spit(path, raw_file(R"({"x":{"dtype":"F16","shape":[7],"data_offsets":[0,14]}})",
                        std::string(reinterpret_cast<const char*>(h), sizeof h)));
    SafetensorsReader r(path);
    std::vector<float> got(7);
    r.read_f32(*r.find("x"), got.data());
    EXPECT_EQ(got[0], 1.0f);
    EXPECT_EQ(got[1], -2.5f);
    EXPECT_EQ(got[2], 65504.0f);
    EXPECT_EQ(got[3], std::ldexp(1.0f, -24));
    EXPECT_EQ(got[4], 3 * std::ldexp(1.0f, -24));
    EXPECT_TRUE(std::isinf(got[5]) && got[5] > 0);
    EXPECT_TRUE(got[6] == 0.0f && std::signbit(got[6]));
}

TEST(Safetensors, UnalignedDataStartIsRead) {
    // Writers without header padding exist (MLX); the data may start at any byte.
    test::TempDir t("sixnd_st_");
    const std::string path = t.dir + "/u.safetensors";
    const float v[] = {1.5f, -3.25f};
    const std::string header = R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    ASSERT_NE((8 + header.size()) % 4, 0u);
    spit(path, raw_file(header, std::string(reinterpret_cast<const char*>(v), sizeof v)));
    SafetensorsReader r(path);
    float got[2];
    r.read_f32(*r.find("v"), got);
    EXPECT_EQ(got[0], 1.5f);
    EXPECT_EQ(got[1], -3.25f);
}

TEST(Safetensors, DamagedFilesNameTheFileAndTheFault) {
    test::TempDir t("sixnd_st_");
    const std::string p = t.dir + "/bad.safetensors";
    const std::string d8(8, '\1'), d16(16, '\1');
    const struct {
        const char* what;
        std::string bytes;
        const char* words;
    } cases[] = {
        {"shorter than 8 bytes", std::string(5, '\0'), "truncated"},
        {"header runs past the end", raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d8).substr(0, 30),
         "truncated"},
        {"data cut short", raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d8), "truncated"},
        {"huge header length", std::string("\xff\xff\xff\xff\xff\xff\x00\x00", 8) + "{}", "more than 100 MiB"},
        {"header not JSON", raw_file(R"({"a":{"dtype":"F32",)", d8), "corrupt safetensors header"},
        {"header not an object", raw_file("[1,2,3]", ""), "not a JSON object"},
        {"header padded with NULs",
         raw_file(std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})") + std::string(4, '\0'), d8),
         "a NUL byte at byte 54"},
        {"bytes hidden after a NUL",
         raw_file(std::string(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})") + std::string(1, '\0') + "junk",
                  d8),
         "a NUL byte"},
        {"unknown dtype", raw_file(R"({"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", d8), "unknown dtype"},
        {"negative dimension", raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8), "not a size"},
        {"entry lacks offsets", raw_file(R"({"a":{"dtype":"F32","shape":[2]}})", d8), "lacks"},
        {"range disagrees with the shape", raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8),
         "misaligned"},
        {"gap between tensors",
         raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                  d16),
         "(gap)"},
        {"overlapping tensors",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  d16),
         "(overlap)"},
        {"first tensor not at 0", raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", d16), "(gap)"},
        {"trailing bytes", raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d16), "belong to none"},
        {"metadata not strings", raw_file(R"({"__metadata__":{"k":1}})", ""), "__metadata__"},
    };
    for (const auto& c : cases) {
        spit(p, c.bytes);
        const std::string e = error_of(p);
        EXPECT_NE(e.find(p), std::string::npos) << c.what << ": " << e;
        EXPECT_NE(e.find(c.words), std::string::npos) << c.what << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << c.what << ": " << e;
    }
    EXPECT_NE(error_of(t.dir + "/absent.safetensors").find("cannot open"), std::string::npos);
    EXPECT_NE(error_of(t.dir).find("not a regular file"), std::string::npos);
}

TEST(Safetensors, ReadingAnIntegerTensorAsFloatIsRefused) {
    test::TempDir t("sixnd_st_");
    const std::string p = t.dir + "/i.safetensors";
    spit(p, raw_file(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')));
    SafetensorsReader r(p);
    float f[2];
    EXPECT_THROW(r.read_f32(*r.find("i"), f), Error);
}

TEST(Safetensors, WriterChecksSizesAndCompleteness) {
    test::TempDir t("sixnd_st_");
    const std::string p = t.dir + "/w.safetensors";
    {
        SafetensorsWriter w(p, {{"a", "F32", {2}}, {"b", "F32", {1}}}, {});
        const float v[2] = {1, 2};
        EXPECT_THROW(w.write_next(v, 4), Error);
        w.write_next(v, 8);
        EXPECT_THROW(w.commit(), Error);
    }
    EXPECT_FALSE(std::filesystem::exists(p)) << "an unfinished file must not appear";
}
