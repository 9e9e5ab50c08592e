// Launch shape of the flash-attention kernels: one block per (row tile, batch x head), and the
// head shapes they are written for. Plain
// C++ (tested without a GPU in tests/model/cuda_flash_grid_test.cpp); the index map is also
// compiled for the device, so the kernels and the test use the same formula.
//
// The tiles go in gridDim.x (limit 2^31 - 1). The B*NH heads go in gridDim.y, whose limit is
// 65535; beyond that they are folded into gridDim.z: block (x, y, z) serves head
// bh = z * gridDim.y + y, and y is chosen so that fewer than gridDim.z blocks of the last z
// slice are spare (bh >= B*NH; they return at once). Head counts a 32-bit int cannot index
// are refused with an error naming the shape.
#pragma once
#include <climits>
#include <string>

#include "core/error.h"

#ifdef __CUDACC__
#define SIXND_HOST_DEVICE __host__ __device__
#else
#define SIXND_HOST_DEVICE
#endif

namespace sixnd::cuda {

constexpr long long kGridYZLimit = 65535;

struct FlashGrid {
    unsigned x = 1, y = 1, z = 1;
};

inline FlashGrid flash_grid(long long tiles, long long heads) {
    if (tiles < 1 || heads < 1 || tiles > INT_MAX || heads > INT_MAX)
        throw Error("flash attention", "cannot launch " + std::to_string(tiles) + " row tiles x " +
                                           std::to_string(heads) + " batch x heads (each must be 1 to " +
                                           std::to_string(INT_MAX) + ")");
    FlashGrid g;
    g.x = static_cast<unsigned>(tiles);
    const long long z = (heads + kGridYZLimit - 1) / kGridYZLimit;  // <= 32768 for heads <= INT_MAX
    g.z = static_cast<unsigned>(z);
    g.y = static_cast<unsigned>((heads + z - 1) / z);
    return g;
}

// The kernels' heads: C split evenly into NH heads of size 64 or 128, which NKV key/value heads
// serve in equal groups. C / NH alone would read C = 129, NH = 2 as head size 64, with the heads
// overlapping.
inline bool flash_heads_supported(int C, int NH, int NKV) {
    if (NH <= 0 || C % NH != 0) return false;
    const int hs = C / NH;
    return (hs == 64 || hs == 128) && NKV > 0 && NH % NKV == 0;
}

// The batch x head index of block (y, z) in a grid of grid_y rows; may be >= the head count in
// the last z slice.
SIXND_HOST_DEVICE inline long long flash_grid_head(unsigned y, unsigned z, unsigned grid_y) {
    return static_cast<long long>(z) * grid_y + y;
}

}  // namespace sixnd::cuda
