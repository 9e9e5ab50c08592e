#include "tokenizer/pretoken_counts.h"

#include <omp.h>

#include <chrono>
#include <cstring>
#include <exception>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/pretoken_cache.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd {

PretokenCounts::PretokenCounts() : slots_(1024) {}

void PretokenCounts::add(std::string_view piece, uint64_t n) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    uint64_t h = bpe::hash_piece(piece);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.count == 0) {
            s = Slot{h, arena_.size(), n, static_cast<uint32_t>(piece.size())};
            arena_.append(piece);
            used_++;
            break;
        }
        if (s.hash == h && s.len == piece.size() && std::memcmp(arena_.data() + s.off, piece.data(), piece.size()) == 0) {
            s.count += n;
            break;
        }
    }
    total_ += n;
}

void PretokenCounts::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.count == 0) continue;
        size_t i = s.hash & mask;
        while (slots_[i].count != 0) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

void PretokenCounts::add_all(const PretokenCounts& other) {
    other.for_each([&](std::string_view piece, uint64_t n) { add(piece, n); });
}

void PretokenCounts::for_each(const std::function<void(std::string_view, uint64_t)>& f) const {
    for (const Slot& s : slots_)
        if (s.count) f(std::string_view(arena_.data() + s.off, s.len), s.count);
}

PretokenCounts count_pretokens(const std::vector<InputRange>& inputs, const CountOptions& opt, uint64_t* bytes_read) {
    const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
    std::vector<std::pair<std::string, uint32_t>> special_list;
    for (const auto& s : opt.specials) special_list.emplace_back(s, 0);
    const SpecialTokens specials(special_list);
    const Pretokenizer pre(opt.pattern, "pattern");
    ChunkReader reader(inputs, opt.chunk_bytes, &specials, opt.pattern);

    std::vector<PretokenCounts> local(static_cast<size_t>(threads));
    std::vector<std::string> batch(static_cast<size_t>(threads)), paths(batch.size());
    auto start = std::chrono::steady_clock::now();
    double last_report = 0;
    for (;;) {
        size_t n = 0;
        while (n < batch.size() && reader.next(batch[n])) paths[n++] = reader.chunk_path();
        if (n == 0) break;
        std::exception_ptr failure;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t k = 0; k < n; k++) {
            try {
                PretokenCounts& counts = local[static_cast<size_t>(omp_get_thread_num())];
                std::vector<std::string_view> pieces;
                std::string_view text = batch[k];
                size_t pos = 0;
                for (;;) {
                    auto m = specials.find(text, pos);
                    size_t end = m ? m->pos : text.size();
                    pieces.clear();
                    pre.split(text.substr(pos, end - pos), pieces);
                    for (std::string_view p : pieces)
                        if (p.size() > 1) counts.add(p);
                    if (!m) break;
                    pos = m->pos + m->len;
                }
            } catch (const Error& e) {  // the pre-tokenizer knows no file name; this chunk's file is the place
#pragma omp critical
                failure = std::make_exception_ptr(Error(input_name(paths[k]), e.what()));
            } catch (...) {
#pragma omp critical
                failure = std::current_exception();
            }
        }
        if (failure) std::rethrow_exception(failure);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (opt.progress && secs - last_report >= 2.0) {
            last_report = secs;
            double mb = static_cast<double>(reader.bytes_read()) / 1e6;
            log_info("counting pre-tokens: " + std::to_string(static_cast<long>(mb)) + " MB read, " +
                     std::to_string(static_cast<long>(mb / secs)) + " MB/s");
        }
    }
    // Merge into the largest table, which then absorbs the fewest insertions.
    size_t biggest = 0;
    for (size_t t = 1; t < local.size(); t++)
        if (local[t].size() > local[biggest].size()) biggest = t;
    for (size_t t = 0; t < local.size(); t++)
        if (t != biggest) local[biggest].add_all(local[t]);
    if (opt.progress) {
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        log_info("counted " + std::to_string(local[biggest].total()) + " pre-tokens (" +
                 std::to_string(local[biggest].size()) + " distinct) in " +
                 std::to_string(static_cast<double>(reader.bytes_read()) / 1e6) + " MB, " + std::to_string(secs) + " s");
    }
    if (bytes_read) *bytes_read = reader.bytes_read();
    return std::move(local[biggest]);
}

}  // namespace sixnd
