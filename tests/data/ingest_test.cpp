// Ingest: every input format, gzip, directories, UTF-8 repair and NFC, and bad input that
// must name the file (and line).
#include "data/ingest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/read_file.h"
#include "tests/util/test_util.h"

using namespace sixnd::data;

namespace {

class Ingest : public ::testing::Test {
protected:
    std::string write(const std::string& name, const std::string& text) {
        std::string p = dir_ + "/" + name;
        std::filesystem::create_directories(std::filesystem::path(p).parent_path());
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
    std::string write_gz(const std::string& name, const std::string& text) {
        std::string p = dir_ + "/" + name;
        gzFile g = gzopen(p.c_str(), "wb");
        gzwrite(g, text.data(), static_cast<unsigned>(text.size()));
        gzclose(g);
        return p;
    }
    static std::vector<std::string> read_all(const std::string& path, const IngestOptions& o = {}) {
        DocReader r(path, o);
        std::vector<std::string> docs;
        std::string d;
        while (r.next(d)) docs.push_back(d);
        return docs;
    }
    const sixnd::test::TempDir tmp_{"ingest"};
    const std::string& dir_ = tmp_.dir;
};

}  // namespace

TEST_F(Ingest, PlainTextIsOneDocument) {
    auto docs = read_all(write("a.txt", "line one\nline two\n"));
    EXPECT_EQ(docs, std::vector<std::string>{"line one\nline two\n"});
}

TEST_F(Ingest, FortuneFilesSplitAtPercentLines) {
    std::string p = write("fortunes", "first\nfortune\n%\nsecond\n%\n%\nthird\r\n%\n");
    DocReader r(p, {});
    EXPECT_EQ(r.format(), InputFormat::fortune);
    EXPECT_EQ(read_all(p), (std::vector<std::string>{"first\nfortune", "second", "third"}));
}

TEST_F(Ingest, JsonlWithChosenField) {
    std::string p = write("x.jsonl", "{\"text\": \"a\", \"body\": \"b1\"}\n\n{\"body\": \"b2\\n\"}\n");
    IngestOptions o;
    o.jsonl_field = "body";
    EXPECT_EQ(read_all(p, o), (std::vector<std::string>{"b1", "b2\n"}));
}

TEST_F(Ingest, GzipIsTransparent) {
    std::string p = write_gz("x.jsonl.gz", "{\"text\": \"zipped\"}\n");
    EXPECT_EQ(read_all(p), std::vector<std::string>{"zipped"});
    std::string big(3 << 20, 'x');  // larger than one read buffer
    EXPECT_EQ(read_all(write_gz("big.txt.gz", big)), std::vector<std::string>{big});
}

TEST_F(Ingest, ExtensionsInAnyCase) {
    EXPECT_EQ(read_all(write_gz("UP.JSONL.GZ", "{\"text\": \"zipped\"}\n")), std::vector<std::string>{"zipped"});
    EXPECT_EQ(DocReader(write("Up.NDJson", "{\"text\": \"j\"}\n"), {}).format(), InputFormat::jsonl);
    EXPECT_THROW(DocReader(write("plain.TXT.GZ", "not gzip"), {}), sixnd::Error);
}

TEST_F(Ingest, ContentHashAndBytes) {
    std::string p = write("h.txt", "hello");
    DocReader r(p, {});
    std::string d;
    while (r.next(d)) {
    }
    EXPECT_EQ(r.bytes_read(), 5u);
    DocReader again(write_gz("h.txt.gz", "hello"), {});
    while (again.next(d)) {
    }
    EXPECT_EQ(again.content_hash(), r.content_hash());
}

TEST_F(Ingest, BrokenJsonlLineFailsWithFileAndLine) {
    std::string p = write("bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"unterminated\n{\"text\": \"fine\"}\n{\"other\": 1}\n");
    try {
        read_all(p);
        FAIL() << "expected an error";
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), p + ":2");
        EXPECT_NE(std::string(e.what()).find("broken JSON"), std::string::npos) << e.what();
    }
    IngestOptions skip;
    skip.on_error = OnError::skip;
    DocReader r(p, skip);
    std::vector<std::string> docs;
    std::string d;
    while (r.next(d)) docs.push_back(d);
    EXPECT_EQ(docs, (std::vector<std::string>{"ok", "fine"}));
    EXPECT_EQ(r.broken_lines(), 2u);
}

// --invalid-utf8 applies to a JSONL field as to plain text: the reader hands the invalid bytes
// on (one 0xFF each) and clean_text repairs or drops them; the line is not "broken JSON".
TEST_F(Ingest, JsonlInvalidUtf8IsLeftToTheInvalidUtf8Policy) {
    std::string p = write("u.jsonl",
                          "{\"text\": \"abc \xff\xfe def\"}\n"
                          "{\"text\": \"cut \xe2\x82 short\"}\n"
                          "{\"text\": \"kept \xef\xbf\xbd \\ufffc as is\", \"other\": \"\xc3\"}\n");
    auto docs = read_all(p);
    ASSERT_EQ(docs, (std::vector<std::string>{"abc \xff\xff def", "cut \xff\xff short", "kept \uFFFD \uFFFC as is"}));
    std::string repaired = docs[0], dropped = docs[0];
    EXPECT_EQ(clean_text(repaired, InvalidUtf8::repair), CleanResult::repaired);
    EXPECT_EQ(repaired, "abc \uFFFD\uFFFD def");
    EXPECT_EQ(clean_text(dropped, InvalidUtf8::drop), CleanResult::dropped);
    EXPECT_EQ(clean_text(docs[2], InvalidUtf8::drop), CleanResult::ok);  // invalid only in another field

    // Broken JSON stays broken JSON, invalid bytes or not.
    std::string broken = write("b.jsonl", "{\"text\": \"abc \xff\n");
    try {
        read_all(broken);
        FAIL() << "expected an error";
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), broken + ":1");
        EXPECT_NE(std::string(e.what()).find("broken JSON"), std::string::npos) << e.what();
    }
}

// Python's json.dumps writes a lone surrogate of its text as an escape ("\\ud800"), which JSON
// parsers refuse; such a line is not broken JSON but text with an invalid character, left to
// --invalid-utf8 like an invalid byte. A proper pair, and an escaped backslash before "ud800",
// are text.
TEST_F(Ingest, JsonlLoneSurrogatesAreLeftToTheInvalidUtf8Policy) {
    std::string p = write("s.jsonl",
                          "{\"text\": \"high \\ud800 alone\"}\n"
                          "{\"text\": \"low \\udc00, pair \\ud83d\\ude00, end \\ud83d\"}\n"
                          "{\"text\": \"not one \\\\ud800\"}\n");
    auto docs = read_all(p);
    ASSERT_EQ(docs, (std::vector<std::string>{"high \xff alone", "low \xff, pair \xF0\x9F\x98\x80, end \xff",
                                              "not one \\ud800"}));
    EXPECT_EQ(clean_text(docs[0], InvalidUtf8::repair), CleanResult::repaired);
    EXPECT_EQ(docs[0], "high \uFFFD alone");
}

TEST_F(Ingest, MissingFieldNamesTheLine) {
    std::string p = write("f.jsonl", "{\"text\": 3}\n");
    try {
        read_all(p);
        FAIL();
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), p + ":1");
        EXPECT_NE(std::string(e.what()).find("not a string"), std::string::npos);
    }
}

// A line that parses but holds no record says what it is, not that a field is missing.
TEST_F(Ingest, LineThatIsNoObjectSaysSo) {
    for (const char* line : {"[\"text\", 1]", "\"just text\"", "null"}) {
        std::string p = write("n.jsonl", std::string("{\"text\": \"ok\"}\n") + line + "\n");
        try {
            read_all(p);
            FAIL() << line;
        } catch (const sixnd::Error& e) {
            EXPECT_EQ(e.where(), p + ":2");
            EXPECT_NE(std::string(e.what()).find("not an object"), std::string::npos) << e.what();
        }
    }
}

TEST_F(Ingest, UnreadableFileNamesIt) {
    EXPECT_THROW(DocReader(dir_ + "/absent.txt", {}), sixnd::Error);
    std::string p = write("locked.txt", "secret");
    chmod(p.c_str(), 0);
    if (access(p.c_str(), R_OK) == 0) GTEST_SKIP() << "running as root: permissions are not enforced";
    try {
        DocReader r(p, {});
        FAIL();
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), p);
    }
}

TEST_F(Ingest, ReadFailureNamesTheFile) {
    std::filesystem::create_directory(dir_ + "/adir");
    try {
        read_all(dir_ + "/adir");
        FAIL();
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), dir_ + "/adir");
    }
}

TEST_F(Ingest, CorruptGzipIsAnError) {
    std::string p = write_gz("c.txt.gz", std::string(100000, 'y'));
    std::filesystem::resize_file(p, std::filesystem::file_size(p) / 2);
    EXPECT_THROW(read_all(p), sixnd::Error);
}

// Gzip files of several members (pigz, bgzip, `cat a.gz b.gz`) are read member after member;
// bytes after a member that begin no other (a damaged member's signature, bytes appended) are an
// error naming the offset. zlib's gzread stopped there without a word, and the run kept the
// first member's documents only.
TEST_F(Ingest, EveryByteOfAGzipFileBelongsToAMember) {
    const std::string first = "{\"text\": \"one\"}\n", second = "{\"text\": \"two\"}\n";
    const std::string a = sixnd::read_whole_file(write_gz("a.gz", first)), b = sixnd::read_whole_file(write_gz("b.gz", second));
    EXPECT_EQ(read_all(write("two.jsonl.gz", a + b)), (std::vector<std::string>{"one", "two"}));
    const std::string damaged = b.substr(0, 1) + std::string(1, '\0') + b.substr(2);
    for (const std::string& tail : {damaged, std::string("junk"), b.substr(0, 1)}) {
        std::string p = write("tail.jsonl.gz", a + tail);
        try {
            read_all(p);
            FAIL() << "read " << p << " with a tail of " << tail.size() << " bytes";
        } catch (const sixnd::Error& e) {
            EXPECT_EQ(e.where(), p);
            EXPECT_NE(std::string(e.what()).find("from offset " + std::to_string(a.size())), std::string::npos) << e.what();
        }
    }
    std::string cut = write("cut.txt.gz", a + b.substr(0, b.size() - 3));
    try {
        read_all(cut);
        FAIL();
    } catch (const sixnd::Error& e) {
        EXPECT_NE(std::string(e.what()).find("corrupt or truncated gzip data"), std::string::npos) << e.what();
    }
}

// Compressed or columnar files this reader cannot unpack are named, with the way out; read as
// text they were removed as "binary" without a word and the run went on without them.
TEST_F(Ingest, FormatsItCannotReadAreNamed) {
    const std::pair<const char*, std::string> files[] = {
        {"a.jsonl.zst", std::string("\x28\xB5\x2F\xFD\x04\x58\x01\x00", 8)},
        {"a.jsonl.xz", std::string("\xFD" "7zXZ\0\0\x04", 8)},
        {"a.txt.bz2", "BZh91AY&SY\x12\x34"},
        {"train.parquet", std::string("PAR1\x15\x04\x15", 7)},
    };
    for (const auto& [name, bytes] : files) {
        std::string p = write(name, bytes);
        try {
            read_all(p);
            FAIL() << name;
        } catch (const sixnd::Error& e) {
            EXPECT_EQ(e.where(), p);
            EXPECT_NE(std::string(e.what()).find("which data prepare does not read"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(read_all(write("b.txt", "BZh... is how bzip2 data starts")), std::vector<std::string>{"BZh... is how bzip2 data starts"});
}

TEST_F(Ingest, DirectoriesAreWalkedInSortedOrder) {
    write("tree/b/2.txt", "x");
    write("tree/a.txt", "x");
    write("tree/b/1.txt", "x");
    auto files = list_source_files(dir_ + "/tree");
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[0], dir_ + "/tree/a.txt");
    EXPECT_EQ(files[2], dir_ + "/tree/b/2.txt");
    EXPECT_THROW(list_source_files(dir_ + "/nothing*"), sixnd::Error);
    // A file reached by a second name (a symbolic link) is listed once.
    std::filesystem::create_symlink(dir_ + "/tree/a.txt", dir_ + "/tree/a.txt.u8");
    EXPECT_EQ(list_source_files(dir_ + "/tree").size(), 3u);
}

// /dev/null was read as an empty file, a FIFO waited for a writer, /dev/zero never ended.
TEST_F(Ingest, OnlyRegularFilesAreRead) {
    try {
        DocReader r("/dev/null", {});
        FAIL() << "a character device was read";
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), "/dev/null");
        EXPECT_EQ(e.fault(), "is a character device, not a regular file");
    }
    // A link to a FIFO inside a walked directory is skipped, as the FIFO itself would be.
    write("tree/a.txt", "x");
    ASSERT_EQ(mkfifo((dir_ + "/pipe").c_str(), 0600), 0);
    std::filesystem::create_symlink(dir_ + "/pipe", dir_ + "/tree/pipe_link");
    EXPECT_EQ(list_source_files(dir_ + "/tree"), std::vector<std::string>{dir_ + "/tree/a.txt"});
}

// Windows line endings: the "%" lines still make a fortune file (read_line drops the "\r").
TEST_F(Ingest, CrlfFortuneFilesAreFortunes) {
    for (const char* text : {"one\r\n%\r\ntwo\r\n", "%\r\none\r\n%\r\ntwo\r\n"}) {
        std::string p = write("crlf", text);
        EXPECT_EQ(DocReader(p, {}).format(), InputFormat::fortune) << text;
        EXPECT_EQ(read_all(p), (std::vector<std::string>{"one", "two"})) << text;
    }
}

// A UTF-8 byte order mark is the file's, not the first document's (JSONL had it dropped by the
// JSON parser; text and fortune files kept it as U+FEFF).
TEST_F(Ingest, ByteOrderMarkIsDropped) {
    const std::string bom = "\xEF\xBB\xBF";
    EXPECT_EQ(read_all(write("b.txt", bom + "text\n")), std::vector<std::string>{"text\n"});
    std::string fortune = write("b_fortune", bom + "%\none\n%\ntwo\n");
    EXPECT_EQ(DocReader(fortune, {}).format(), InputFormat::fortune);
    EXPECT_EQ(read_all(fortune), (std::vector<std::string>{"one", "two"}));
    EXPECT_EQ(read_all(write("b.jsonl", bom + "{\"text\": \"j\"}\n")), std::vector<std::string>{"j"});
    EXPECT_EQ(read_all(write_gz("b.txt.gz", bom + "zipped")), std::vector<std::string>{"zipped"});
    EXPECT_EQ(read_all(write("only_bom.txt", bom)), std::vector<std::string>{});
    // A mark later in the file is text (U+FEFF, a zero-width no-break space).
    EXPECT_EQ(read_all(write("mid.txt", "a" + bom)), std::vector<std::string>{"a" + bom});
}

// UTF-16 or UTF-32 text read as UTF-8 is NUL bytes between the letters: it was dropped as binary
// without a word. Each kind of file, gzip'd or not, is named with its encoding.
TEST_F(Ingest, WideEncodingsAreRefusedByName) {
    const std::pair<std::string, const char*> marks[] = {{std::string("\xFF\xFEh\0i\0", 6), "UTF-16LE"},
                                                         {std::string("\xFE\xFF\0h\0i", 6), "UTF-16BE"},
                                                         {std::string("\xFF\xFE\0\0h\0\0\0", 8), "UTF-32LE"},
                                                         {std::string("\0\0\xFE\xFFh\0\0\0", 8), "UTF-32BE"}};
    for (size_t m = 0; m < std::size(marks); m++) {
        const auto& [text, encoding] = marks[m];
        const std::string name = "w" + std::to_string(m);
        for (const std::string& p : {write(name + ".txt", text), write(name + ".jsonl", text), write_gz(name + ".txt.gz", text)}) {
            try {
                read_all(p);
                ADD_FAILURE() << p << ": expected an error";
            } catch (const sixnd::Error& e) {
                EXPECT_EQ(e.where(), p);
                EXPECT_NE(std::string(e.what()).find(encoding), std::string::npos) << e.what();
            }
        }
    }
}

TEST(CleanText, RepairsOrDropsInvalidUtf8) {
    std::string s = "ok \xC3 then \xFF";
    EXPECT_EQ(clean_text(s, InvalidUtf8::repair), CleanResult::repaired);
    EXPECT_EQ(s, "ok \uFFFD then \uFFFD");
    std::string t = "bad \xE2\x82";
    EXPECT_EQ(clean_text(t, InvalidUtf8::drop), CleanResult::dropped);
}

TEST(CleanText, NormalisesToNfc) {
    std::string s = "cafe\u0301";
    EXPECT_EQ(clean_text(s, InvalidUtf8::repair), CleanResult::ok);
    EXPECT_EQ(s, "caf\u00e9");
    std::string ascii = "plain";
    EXPECT_EQ(clean_text(ascii, InvalidUtf8::drop), CleanResult::ok);
}

TEST(Format, ParsesNames) {
    EXPECT_EQ(parse_format("jsonl"), InputFormat::jsonl);
    EXPECT_THROW(parse_format("xml"), sixnd::Error);
}

TEST(CleanText, FastPathAgreesWithUtf8proc) {
    // Punctuation that takes the fast path, and the two singletons just before it that do not.
    std::string s = "\u201cquoted\u201d \u2014 dash\u2026 caf\u00e9";
    EXPECT_EQ(clean_text(s, InvalidUtf8::repair), CleanResult::ok);
    EXPECT_EQ(s, "\u201cquoted\u201d \u2014 dash\u2026 caf\u00e9");
    std::string quad = "a\u2000b\u2001c";
    clean_text(quad, InvalidUtf8::repair);
    EXPECT_EQ(quad, "a\u2002b\u2003c");
    std::string ohm = "\u2126";  // OHM SIGN -> GREEK CAPITAL OMEGA
    clean_text(ohm, InvalidUtf8::repair);
    EXPECT_EQ(ohm, "\u03a9");
}

// A directory named like a prepare's scratch (OUT.partial-PID, OUT.old-PID) holds shards, not
// text; one whose number no pid can be (above 2^22, or with a leading zero) is the user's own
// backup, and its text is read.
TEST_F(Ingest, OnlyPidNumberedPrepareSiblingsAreSkipped) {
    write("tree/web.old-1234/a.txt", "x");
    write("tree/web.partial-1234/b.txt", "x");
    write("tree/web.old-20250101/c.txt", "x");
    write("tree/web.partial-0123/d.txt", "x");
    EXPECT_EQ(list_source_files(dir_ + "/tree"),
              (std::vector<std::string>{dir_ + "/tree/web.old-20250101/c.txt", dir_ + "/tree/web.partial-0123/d.txt"}));
}
