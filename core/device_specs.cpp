#include "core/device_specs.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace sixnd {

const std::vector<DeviceSpec>& device_specs() {
    constexpr double T = 1e12, G = 1e9, MiB = 1024.0 * 1024;
    static const std::vector<DeviceSpec> table = {
        {"h100-pcie", "H100 PCIe", "NVIDIA H100 PCIe", 756 * T, 51 * T, 2.0e12, 81559 * MiB, "H100 PCIe data sheet"},
        {"h100-nvl", "H100 NVL", "NVIDIA H100 NVL", 835 * T, 60 * T, 3.9e12, 95830 * MiB, "H100 NVL data sheet"},
        {"h200-nvl", "H200 NVL", "NVIDIA H200 NVL", 835 * T, 60 * T, 4.8e12, 143771 * MiB, "H200 NVL data sheet"},
        {"gh200", "GH200", "NVIDIA GH200", 989 * T, 67 * T, 4.0e12, 96 * G, "GH200 data sheet (memory: the nominal 96 GB, no driver report at hand)"},
        {"h100", "H100", "NVIDIA H100 SXM 80GB", 989 * T, 67 * T, 3.35e12, 81559 * MiB,
         "H100 SXM data sheet: 989 TFLOP/s BF16 dense, 3.35 TB/s HBM3"},
        {"h200", "H200", "NVIDIA H200 SXM 141GB", 989 * T, 67 * T, 4.8e12, 143771 * MiB,
         "H200 data sheet: 989 TFLOP/s BF16 dense, 4.8 TB/s HBM3e"},
        {"", "H800 PCIe", "NVIDIA H800 PCIe", 756 * T, 51 * T, 0, 0, "H800 PCIe data sheet"},
        {"", "H800", "NVIDIA H800", 989 * T, 67 * T, 0, 0, "H800 data sheet"},
        {"", "H20", "NVIDIA H20", 148 * T, 44 * T, 0, 0, "H20 data sheet"},
        {"b200", "B200", "NVIDIA B200 (HGX, 1000 W)", 2.25e15, 0, 8e12, 183359 * MiB,
         "B200 HGX: 2.25 PFLOP/s BF16 dense (4.5 sparse), 8 TB/s HBM3e"},
        {"", "B100", "NVIDIA B100", 1.75e15, 0, 0, 0, "B100 data sheet"},
        {"a100-40gb", "A100 40GB", "NVIDIA A100 SXM 40GB", 312 * T, 19.5 * T, 1.555e12, 40960 * MiB,
         "A100 data sheet: 312 TFLOP/s BF16 dense, 1.555 TB/s HBM2 (40GB)"},
        {"a100", "A100", "NVIDIA A100 SXM 80GB", 312 * T, 19.5 * T, 2.039e12, 81920 * MiB,
         "A100 data sheet: 312 TFLOP/s BF16 dense, 2.039 TB/s HBM2e (80GB SXM)"},
        {"", "A800", "NVIDIA A800", 312 * T, 19.5 * T, 0, 0, "A800 data sheet"},
        {"", "A10G", "NVIDIA A10G", 70 * T, 0, 0, 0, "A10G data sheet"},
        {"", "A10", "NVIDIA A10", 125 * T, 31.2 * T, 0, 0, "A10 data sheet"},
        {"", "A30", "NVIDIA A30", 165 * T, 10.3 * T, 0, 0, "A30 data sheet"},
        {"", "A40", "NVIDIA A40", 149.7 * T, 37.4 * T, 0, 0, "A40 data sheet"},
        {"", "L40S", "NVIDIA L40S", 362.05 * T, 91.6 * T, 0, 0, "L40S data sheet"},
        {"", "L40", "NVIDIA L40", 181 * T, 90.5 * T, 0, 0, "L40 data sheet"},
        {"", "L4", "NVIDIA L4", 121 * T, 30.3 * T, 0, 0, "L4 data sheet"},
        {"", "RTX 6000 Ada", "NVIDIA RTX 6000 Ada", 364.2 * T, 91.1 * T, 0, 0, "RTX 6000 Ada data sheet"},
        {"", "RTX A6000", "NVIDIA RTX A6000", 154.8 * T, 38.7 * T, 0, 0, "RTX A6000 data sheet"},
        {"", "RTX 5090", "NVIDIA RTX 5090", 209.5 * T, 104.8 * T, 0, 0, "RTX 5090 data sheet"},
        {"", "RTX 4090", "NVIDIA RTX 4090", 165.2 * T, 82.6 * T, 0, 0, "RTX 4090 data sheet"},
        {"", "RTX 4080", "NVIDIA RTX 4080", 97.5 * T, 48.7 * T, 0, 0, "RTX 4080 data sheet"},
        {"", "RTX 3090", "NVIDIA RTX 3090", 71 * T, 35.6 * T, 0, 0, "RTX 3090 data sheet"},
        {"", "RTX 3080", "NVIDIA RTX 3080", 59.5 * T, 29.8 * T, 0, 0, "RTX 3080 data sheet"},
    };
    return table;
}

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The words of a name, in lower case: what lies between spaces and punctuation ("NVIDIA
// A100-SXM4-40GB": nvidia, a100, sxm4, 40gb).
std::vector<std::string> words_of(const std::string& name) {
    std::string spaced = lower(name);
    for (char& c : spaced)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = ' ';
    std::istringstream in(spaced);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

// Whole words, not parts of one: an RTX A4000 is no A40, an RTX A3000 no A30.
bool contains_words(const std::vector<std::string>& name, const std::string& words) {
    for (const std::string& w : words_of(words))
        if (std::find(name.begin(), name.end(), w) == name.end()) return false;
    return true;
}

}  // namespace

const DeviceSpec* find_device_spec(const std::string& key_or_name) {
    const std::string k = lower(key_or_name);
    for (const DeviceSpec& d : device_specs())
        if (!d.key.empty() && k == d.key) return &d;
    const std::vector<std::string> words = words_of(key_or_name);
    for (const DeviceSpec& d : device_specs())
        if (contains_words(words, d.match)) return &d;
    return nullptr;
}

}  // namespace sixnd
