#include "tokenizer/stream_encoder.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "core/error.h"

namespace sixnd {

EncodeStats encode_stream(const Tokenizer& tok, const std::vector<InputRange>& inputs, int threads,
                          size_t chunk_bytes, const std::function<void(const std::vector<uint32_t>&)>& sink,
                          const std::function<void(const EncodeStats&)>& progress) {
    threads = threads > 0 ? threads : omp_get_max_threads();
    const SpecialTokens specials(tok.spec().specials);
    ChunkReader reader(inputs, chunk_bytes, &specials, tok.spec().pattern);
    std::vector<std::string> batch(static_cast<size_t>(threads));
    std::vector<std::vector<uint32_t>> ids(batch.size());
    std::vector<std::string> paths(batch.size());
    EncodeStats stats;
    const auto start = std::chrono::steady_clock::now();
    auto so_far = [&] {
        stats.bytes = reader.bytes_read();
        stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return stats;
    };
    for (;;) {
        size_t n = 0, held = 0;
        while (n < batch.size() && reader.next(batch[n])) {
            paths[n] = reader.chunk_path();
            held += batch[n++].size();
        }
        if (n == 0) break;
        stats.peak_buffer_bytes = std::max(stats.peak_buffer_bytes, held + reader.peak_buffer());
        std::exception_ptr failure;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t k = 0; k < n; k++) {
            try {
                ids[k] = tok.encode(batch[k]);
            } catch (const Error& e) {  // the encoder knows no file name; this chunk's file is the place
#pragma omp critical
                failure = std::make_exception_ptr(Error(input_name(paths[k]), e.what()));
            } catch (...) {
#pragma omp critical
                failure = std::current_exception();
            }
        }
        if (failure) std::rethrow_exception(failure);
        for (size_t k = 0; k < n; k++) {
            stats.tokens += ids[k].size();
            sink(ids[k]);
        }
        if (progress) progress(so_far());
    }
    return so_far();
}

}  // namespace sixnd
