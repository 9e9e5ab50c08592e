// Decontamination removes the training documents that contain a planted evaluation passage,
// whatever its case, punctuation or spacing, and nothing else, naming the file it came from.
#include "data/decontaminate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/util/test_util.h"

using namespace sixnd::data;

namespace {

std::string random_words(std::mt19937_64& rng, int n) {
    std::string s;
    for (int i = 0; i < n; i++) {
        if (i) s += ' ';
        for (int k = 0; k < 6; k++) s += static_cast<char>('a' + rng() % 26);
    }
    return s;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string shout(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

TEST(Decontaminate, RemovesExactlyThePlantedPassages) {
    const sixnd::test::TempDir tmp("decon");
    const std::string& dir = tmp.dir;
    std::mt19937_64 rng(5);
    // Two evaluation sets in JSONL, 20 passages of 20 to 40 words each, and one too short to match.
    std::vector<std::string> passages[2];
    for (int f = 0; f < 2; f++) {
        std::string jsonl;
        for (int i = 0; i < 20; i++) {
            passages[f].push_back(random_words(rng, 20 + i));
            jsonl += "{\"text\": \"" + passages[f].back() + "\"}\n";
        }
        jsonl += "{\"text\": \"too short to matter\"}\n";
        write(dir + "/eval" + std::to_string(f) + ".jsonl", jsonl);
    }
    IngestOptions io;
    Decontaminator d({dir + "/eval0.jsonl", dir + "/eval1.jsonl"}, 13, io);
    EXPECT_EQ(d.short_passages(), 2u);

    NormWords w;
    int planted = 0;
    for (int i = 0; i < 400; i++) {
        std::string doc = random_words(rng, 150);
        int expect = -1;
        if (i % 10 == 0) {
            // A 13-word window of a passage, shouted and punctuated, in the middle of the document.
            int f = (i / 10) % 2;
            const std::string& p = passages[f][(i / 20) % 20];
            size_t start = 0;
            for (int k = 0; k < 3; k++) start = p.find(' ', start) + 1;
            size_t end = start;
            for (int k = 0; k < 13; k++) end = p.find(' ', end + 1);
            std::string window = p.substr(start, end - start);
            doc = doc.substr(0, 300) + " " + shout(window) + ", indeed! " + doc.substr(300);
            expect = f;
            planted++;
        } else if (i % 10 == 5) {
            // Twelve words of a passage are not enough.
            const std::string& p = passages[0][i % 20];
            size_t end = 0;
            for (int k = 0; k < 12; k++) end = p.find(' ', end + 1);
            doc += " " + p.substr(0, end);
        }
        normalize_words(doc, w);
        EXPECT_EQ(d.hit(w), expect) << "document " << i;
    }
    EXPECT_EQ(planted, 40);
}

TEST(Decontaminate, NoFilesNoHits) {
    Decontaminator d({}, 13, IngestOptions{});
    NormWords w;
    normalize_words("anything at all", w);
    EXPECT_EQ(d.hit(w), -1);
}

// An evaluation item's strings are found however deep its arrays nest: deeper than the call
// stack once crashed the walk over them.
TEST(Decontaminate, FindsStringsNestedDeeperThanTheStack) {
    const sixnd::test::TempDir tmp("decon_deep");
    std::mt19937_64 rng(7);
    const std::string passage = random_words(rng, 20);
    constexpr int kDepth = 200000;
    write(tmp.dir + "/eval.jsonl", std::string(kDepth, '[') + "\"" + passage + "\"" + std::string(kDepth, ']') + "\n");
    IngestOptions io;
    io.jsonl_field.clear();  // as the pipeline reads evaluation files: every string counts
    Decontaminator d({tmp.dir + "/eval.jsonl"}, 13, io);
    NormWords w;
    normalize_words(random_words(rng, 30) + " " + passage, w);
    EXPECT_EQ(d.hit(w), 0);
}
