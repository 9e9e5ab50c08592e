#include "model/ops.h"

#include "core/error.h"

namespace sixnd {

AttentionKind parse_attention(const std::string& s) {
    if (s == "naive") return AttentionKind::naive;
    if (s == "flash") return AttentionKind::flash;
    throw Error("--attention", "unknown attention '" + s + "' (expected naive or flash)");
}

const char* attention_name(AttentionKind k) { return k == AttentionKind::naive ? "naive" : "flash"; }

}  // namespace sixnd
