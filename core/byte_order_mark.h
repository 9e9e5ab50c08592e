// Byte order marks at the start of a text file. UTF-8's is no part of the text (editors on
// Windows write one) and is skipped; UTF-16's and UTF-32's (Windows' "Unicode" text, what
// PowerShell's `>` writes) mean text that read as UTF-8 is NUL bytes between the letters: named,
// with the command that converts it.
#pragma once
#include <string>
#include <string_view>

#include "core/error.h"

namespace sixnd {

// The length of the UTF-8 byte order mark `head` starts with: 3, or 0 without one.
inline size_t utf8_bom_size(std::string_view head) { return head.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; }

// Throws Error(path, ...) when head starts with a UTF-16 or UTF-32 byte order mark.
inline void refuse_wide_text(std::string_view head, const std::string& path) {
    const char* wide = head.rfind(std::string_view("\xFF\xFE\0\0", 4), 0) == 0   ? "UTF-32LE"
                       : head.rfind(std::string_view("\0\0\xFE\xFF", 4), 0) == 0 ? "UTF-32BE"
                       : head.rfind("\xFF\xFE", 0) == 0                          ? "UTF-16LE"
                       : head.rfind("\xFE\xFF", 0) == 0                          ? "UTF-16BE"
                                                                                 : nullptr;
    if (wide)
        throw Error(path, std::string("is ") + wide + " text (by its byte order mark), and sixnd reads UTF-8: "
                              "convert it first (iconv -f " + wide + " -t UTF-8)");
}

}  // namespace sixnd
