// Lab matmul: C = A*B for float matrices, row-major, of any size.
//
// What you practise here (the PMPP lecture on tiled matrix multiplication, lecture L5 on
// tiling for registers, lab sheet 06): the naive kernel reads two floats from global
// memory for every multiply-add (a CGMA ratio of 1), so the memory, not the arithmetic,
// sets its speed. A block that copies a tile of A and a tile of B into shared memory
// once and lets every thread reuse them divides that traffic by the tile width. Then the
// same idea one level down: each thread keeps several outputs and the operands they
// share in registers (unroll-and-jam), so that it does many multiply-adds per value it
// reads from shared memory.
//
// Sizes are arbitrary: no dimension is a multiple of the tile in general, so the tiles
// at the edges are partial. Load 0 for an element outside A or B (it adds nothing) and
// do not store outside C. Every thread must still reach every __syncthreads().
//
// The answer is checked against the exact product, element by element, within the
// rounding any order of float multiply-adds can produce, fused (FMA) or not: the handout
// explains the bound. A term left out or counted twice is far outside it.
//
// Build and run:   cudalab run matmul .          (checks every test case)
//                  cudalab run matmul . --bench  (times it against cuBLAS)
#include <cstdint>

#include "labkit/check.hpp"
#include "matmul.hpp"

// BEGIN SOLUTION
// The kernel below is the well-known design of fast CUDA-core SGEMMs, one level of
// tiling per level of the memory hierarchy:
//   block  a 128 x 256 tile of C; the matching 128 x 16 slice of A and 16 x 256 slice of
//          B pass through shared memory, 16 values of k (one tile) at a time;
//   warp   a 32 x 128 piece of the block's tile (warp tiling): per step of k a warp's 32
//          threads need only 32 values of A and 128 of B from shared memory, and each of
//          their float4 reads covers at most 128 contiguous bytes: one shared-memory
//          transaction, no bank conflicts (threads that want the same float4 share it);
//   thread an 8 x 16 piece of the warp's: per step of k it reads 8 values of A and 16 of
//          B into registers and does their 128 multiply-adds (an outer product), more
//          than 5 per value read (the lecture's unroll-and-jam and scalar replacement,
//          taken to 8 x 16). Its 128 sums take most of a thread's 255 registers, so one
//          block of 256 threads runs per SM, and the arithmetic keeps it busy.
// A is stored transposed in shared memory (k-major), so that the 8 values of A a thread
// needs are contiguous and come as two float4 reads, like those of B.
//
// Hiding the latency of global memory: on sm_80 and later the tiles travel with
// asynchronous copies (cp.async), which go from global to shared memory without passing
// through registers. kStages tiles have shared-memory buffers; while the block computes
// on one, the copies of the next kStages - 1 are already on their way, and one
// __syncthreads() per tile suffices. The registers this frees hold a second set of
// fragments instead: the values of A and B for step p + 1 are read from shared memory
// while the multiply-adds of step p run. Before sm_80, and for matrices that do not
// divide into whole tiles (the guarded kernel: every element checked), each thread
// loads its share of the next tile into registers during the arithmetic and stores it
// into the other of two buffers afterwards.
//
// All sizes are template parameters, checked at compile time, so that other shapes are
// one line away (the configurations worth trying are listed at the end of this block).
namespace {

constexpr int kWarpSize = 32;

// kBlockK: values of k per tile. kWarpsM x kWarpsN warps per block. kLanesM x (32 /
// kLanesM) lanes in a warp. Each thread holds kFragsM x kFragsN fragments of 4 x 4
// outputs, spread so that the lanes of a warp read contiguous float4s. kStages: tiles in
// shared memory at once on the asynchronous path.
template <int kBlockK_, int kWarpsM_, int kWarpsN_, int kLanesM_, int kFragsM_, int kFragsN_, int kStages_>
struct WarpTiling {
    static constexpr int kBlockK = kBlockK_;
    static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
    static constexpr int kLanesM = kLanesM_, kLanesN = kWarpSize / kLanesM_;
    static constexpr int kFragsM = kFragsM_, kFragsN = kFragsN_;
    static constexpr int kStages = kStages_;

    static constexpr int kThreadM = 4 * kFragsM, kThreadN = 4 * kFragsN;        // outputs per thread
    static constexpr int kFragStrideM = 4 * kLanesM, kFragStrideN = 4 * kLanesN;  // between a thread's fragments
    static constexpr int kWarpM = kLanesM * kThreadM, kWarpN = kLanesN * kThreadN;
    static constexpr int kBlockM = kWarpsM * kWarpM, kBlockN = kWarpsN * kWarpN;
    static constexpr int kThreads = kWarpSize * kWarpsM * kWarpsN;
    // Two blocks per SM where the accumulators leave room for it (at most 128 registers
    // per thread), one otherwise.
    static constexpr int kMinBlocksPerSm = kThreadM * kThreadN <= 64 ? 2 : 1;

    // Shared memory, per buffer (stage): the A tile transposed (kBlockK rows of kBlockM
    // values, each row padded by 4 floats so that the transposing stores spread over all
    // banks, and still 16-byte aligned), then the B tile (kBlockK rows of kBlockN values).
    static constexpr int kStrideA = kBlockM + 4;
    static constexpr int kStrideB = kBlockN;
    static constexpr int kFloatsA = kBlockK * kStrideA;
    static constexpr int kFloatsB = kBlockK * kStrideB;
    static constexpr int kFloatsStage = kFloatsA + kFloatsB;
    static constexpr std::size_t kStageBytes = std::size_t{kFloatsStage} * sizeof(float);

    // Register-staged loads: each thread loads kVectorsA float4s of the A tile and
    // kVectorsB of the B tile per tile. Thread t's first float4 of A is row t / (kBlockK
    // / 4), column 4 * (t % (kBlockK / 4)) of the tile, and its next ones are kRowStepA
    // rows further down; likewise for B (and for B's asynchronous copies).
    static constexpr int kVectorsA = kBlockM * kBlockK / 4 / kThreads;
    static constexpr int kVectorsB = kBlockK * kBlockN / 4 / kThreads;
    static constexpr int kRowStepA = kThreads / (kBlockK / 4);
    static constexpr int kRowStepB = kThreads / (kBlockN / 4);

    // Asynchronous copies of A: a 16-byte copy cannot transpose, so A goes one float at a
    // time (kCopiesA per thread per tile). The lanes of a warp copy a patch of kWarpSize /
    // kChunkA rows by kChunkA values of k: whole 32-byte sectors of A in global memory,
    // and, with the rows of the transposed tile padded by 4 floats, 32 different banks of
    // shared memory. Thread t's first float is row t / kChunkA, k t % kChunkA of the
    // tile; its next ones are kRowStepCopyA rows further down, then kChunkA further along k.
    static constexpr int kChunkA = kBlockK < 8 ? kBlockK : 8;
    static constexpr int kRowStepCopyA = kThreads / kChunkA;
    static constexpr int kCopiesPerChunkA = kBlockM / kRowStepCopyA;
    static constexpr int kCopiesA = kCopiesPerChunkA * (kBlockK / kChunkA);

    static_assert(kWarpSize % kLanesM == 0, "the lanes of a warp must form a kLanesM x kLanesN grid");
    static_assert(kBlockK % 4 == 0, "A is loaded in float4s along k");
    static_assert(kVectorsA >= 1 && kVectorsA * kThreads * 4 == kBlockM * kBlockK,
                  "the threads must load the A tile in whole float4s, each the same number");
    static_assert(kVectorsB >= 1 && kVectorsB * kThreads * 4 == kBlockK * kBlockN,
                  "the threads must load the B tile in whole float4s, each the same number");
    static_assert(kThreads % (kBlockK / 4) == 0 && kThreads % (kBlockN / 4) == 0,
                  "every float4 of a thread must sit in the same tile columns");
    static_assert(kBlockK % kChunkA == 0 && kBlockM % kRowStepCopyA == 0,
                  "the threads must copy the A tile in whole patches, each the same number of floats");
    static_assert(kCopiesA * kThreads == kBlockM * kBlockK, "the copies of A must cover its tile once");
    static_assert(kStages >= 2, "the pipeline needs a buffer to compute on and one to fill");
};

// ---- Register-staged double buffering (before sm_80, and the guarded kernel) ----------

// A thread's share of the next tile, on its way from global memory to shared memory.
template <class Cfg>
struct Staged {
    float4 a[Cfg::kVectorsA];
    float4 b[Cfg::kVectorsB];
};

// Reads tile number `tile` of A and B into registers. Without kGuarded every float4 is
// inside the matrices and 16-byte aligned (the host checks); with it, each element is
// read on its own and an element outside A or B reads as 0, which adds nothing.
template <class Cfg, bool kGuarded>
__device__ __forceinline__ void load_tile(Staged<Cfg>& staged, const float* __restrict__ a,
                                          const float* __restrict__ b, int m, int n, int k, int block_m,
                                          int block_n, int tile) {
    const int t = threadIdx.x;
    const int a_row = block_m + t / (Cfg::kBlockK / 4);
    const int a_col = tile * Cfg::kBlockK + 4 * (t % (Cfg::kBlockK / 4));
    const int b_row = tile * Cfg::kBlockK + t / (Cfg::kBlockN / 4);
    const int b_col = block_n + 4 * (t % (Cfg::kBlockN / 4));
#pragma unroll
    for (int v = 0; v < Cfg::kVectorsA; ++v) {
        const int row = a_row + v * Cfg::kRowStepA;
        if constexpr (!kGuarded) {
            staged.a[v] = *reinterpret_cast<const float4*>(a + static_cast<std::size_t>(row) * k + a_col);
        } else {
            float e[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                e[i] = row < m && a_col + i < k ? a[static_cast<std::size_t>(row) * k + a_col + i] : 0.0f;
            staged.a[v] = make_float4(e[0], e[1], e[2], e[3]);
        }
    }
#pragma unroll
    for (int v = 0; v < Cfg::kVectorsB; ++v) {
        const int row = b_row + v * Cfg::kRowStepB;
        if constexpr (!kGuarded) {
            staged.b[v] = *reinterpret_cast<const float4*>(b + static_cast<std::size_t>(row) * n + b_col);
        } else {
            float e[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                e[i] = row < k && b_col + i < n ? b[static_cast<std::size_t>(row) * n + b_col + i] : 0.0f;
            staged.b[v] = make_float4(e[0], e[1], e[2], e[3]);
        }
    }
}

// Stores the staged tile into one shared-memory buffer: A transposed (the four values of
// k in a float4 go to four rows of the A tile), B as it is.
template <class Cfg>
__device__ __forceinline__ void store_tile(const Staged<Cfg>& staged, float* stage) {
    float* const a_tile = stage;
    float* const b_tile = stage + Cfg::kFloatsA;
    const int t = threadIdx.x;
    const int a_row = t / (Cfg::kBlockK / 4), a_col = 4 * (t % (Cfg::kBlockK / 4));
    const int b_row = t / (Cfg::kBlockN / 4), b_col = 4 * (t % (Cfg::kBlockN / 4));
#pragma unroll
    for (int v = 0; v < Cfg::kVectorsA; ++v) {
        float* column = a_tile + a_col * Cfg::kStrideA + a_row + v * Cfg::kRowStepA;
        column[0 * Cfg::kStrideA] = staged.a[v].x;
        column[1 * Cfg::kStrideA] = staged.a[v].y;
        column[2 * Cfg::kStrideA] = staged.a[v].z;
        column[3 * Cfg::kStrideA] = staged.a[v].w;
    }
#pragma unroll
    for (int v = 0; v < Cfg::kVectorsB; ++v)
        *reinterpret_cast<float4*>(b_tile + (b_row + v * Cfg::kRowStepB) * Cfg::kStrideB + b_col) = staged.b[v];
}

// ---- The arithmetic, shared by both pipelines ------------------------------------------

// One step of k as far as this thread needs it: its kThreadM values of A's column and
// kThreadN values of B's row.
template <class Cfg>
struct Fragments {
    float a[Cfg::kThreadM];
    float b[Cfg::kThreadN];
};

// Reads step p of the tile in `stage`; a_frag_base and b_frag_base are the offsets of this
// thread's first fragment in a row of the A tile and of the B tile.
template <class Cfg>
__device__ __forceinline__ void load_fragments(Fragments<Cfg>& frag, const float* stage, int a_frag_base,
                                               int b_frag_base, int p) {
    const float* a_row = stage + p * Cfg::kStrideA + a_frag_base;
    const float* b_row = stage + Cfg::kFloatsA + p * Cfg::kStrideB + b_frag_base;
#pragma unroll
    for (int f = 0; f < Cfg::kFragsM; ++f) {
        const float4 v = *reinterpret_cast<const float4*>(a_row + f * Cfg::kFragStrideM);
        frag.a[4 * f + 0] = v.x;
        frag.a[4 * f + 1] = v.y;
        frag.a[4 * f + 2] = v.z;
        frag.a[4 * f + 3] = v.w;
    }
#pragma unroll
    for (int f = 0; f < Cfg::kFragsN; ++f) {
        const float4 v = *reinterpret_cast<const float4*>(b_row + f * Cfg::kFragStrideN);
        frag.b[4 * f + 0] = v.x;
        frag.b[4 * f + 1] = v.y;
        frag.b[4 * f + 2] = v.z;
        frag.b[4 * f + 3] = v.w;
    }
}

// The outer product: kThreadM * kThreadN multiply-adds from registers.
template <class Cfg>
__device__ __forceinline__ void multiply_add(float (&acc)[Cfg::kThreadM][Cfg::kThreadN], const Fragments<Cfg>& frag) {
#pragma unroll
    for (int i = 0; i < Cfg::kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < Cfg::kThreadN; ++j) acc[i][j] += frag.a[i] * frag.b[j];
}

// All tiles of k, register-staged and double-buffered (two buffers of shared memory).
template <class Cfg, bool kGuarded>
__device__ __forceinline__ void mainloop_register_staged(float (&acc)[Cfg::kThreadM][Cfg::kThreadN], float* shared,
                                                         const float* __restrict__ a, const float* __restrict__ b,
                                                         int m, int n, int k, int block_m, int block_n,
                                                         int a_frag_base, int b_frag_base) {
    const int tiles = (k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    Staged<Cfg> staged;
    load_tile<Cfg, kGuarded>(staged, a, b, m, n, k, block_m, block_n, 0);
    store_tile<Cfg>(staged, shared);
    __syncthreads();

    for (int tile = 0; tile < tiles; ++tile) {
        const int buffer = tile % 2;
        const bool more = tile + 1 < tiles;  // the same for every thread of the block
        // The next tile's loads are issued now and arrive while the arithmetic below runs.
        if (more) load_tile<Cfg, kGuarded>(staged, a, b, m, n, k, block_m, block_n, tile + 1);

        const float* stage = shared + buffer * Cfg::kFloatsStage;
#pragma unroll
        for (int p = 0; p < Cfg::kBlockK; ++p) {
            Fragments<Cfg> frag;
            load_fragments<Cfg>(frag, stage, a_frag_base, b_frag_base, p);
            multiply_add<Cfg>(acc, frag);
        }

        // The other buffer was last read during the previous tile, before the barrier
        // that ended it, so it can be overwritten now.
        if (more) store_tile<Cfg>(staged, shared + (1 - buffer) * Cfg::kFloatsStage);
        __syncthreads();
    }
}

// ---- Asynchronous copies (sm_80 and later; whole tiles only) -----------------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// cp.async copies 4, 8 or 16 bytes from global to shared memory without holding them in
// a register; .ca keeps the line in L1 (the only choice for 4 bytes), .cg goes through L2
// only. The copies a thread issues between two commits form a group, and wait_group N
// returns once all but the N most recent groups of this thread have arrived (other
// threads' copies are seen only after a __syncthreads()).
__device__ __forceinline__ void copy_async_4(float* shared_dst, const float* global_src) {
    const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(global_src) : "memory");
}

__device__ __forceinline__ void copy_async_16(float* shared_dst, const float* global_src) {
    const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src) : "memory");
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void wait_copies() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Where this thread's copies go from and to. a_src and b_src are its first float of A and
// first float4 of B in tile 0 (the next tile's are kBlockK further along the rows of A and
// kBlockK rows further down B); a_dst and b_dst are where they go inside a buffer.
template <class Cfg>
struct CopyPlan {
    const float* a_src;
    const float* b_src;
    std::size_t a_row_step;  // kRowStepCopyA rows of A
    std::size_t b_row_step;  // kRowStepB rows of B
    int a_dst, b_dst;

    __device__ __forceinline__ CopyPlan(const float* a, const float* b, int n, int k, int block_m, int block_n) {
        const int t = threadIdx.x;
        const int a_row = t / Cfg::kChunkA, a_col = t % Cfg::kChunkA;
        const int b_row = t / (Cfg::kBlockN / 4), b_col = 4 * (t % (Cfg::kBlockN / 4));
        a_src = a + static_cast<std::size_t>(block_m + a_row) * k + a_col;
        b_src = b + static_cast<std::size_t>(b_row) * n + block_n + b_col;
        a_row_step = static_cast<std::size_t>(Cfg::kRowStepCopyA) * k;
        b_row_step = static_cast<std::size_t>(Cfg::kRowStepB) * n;
        a_dst = a_col * Cfg::kStrideA + a_row;  // transposed
        b_dst = Cfg::kFloatsA + b_row * Cfg::kStrideB + b_col;
    }

    // Issues copy j (0 <= j < kCopiesA + kVectorsB, known at compile time once unrolled) of the tile
    // whose first column of A is a_tile_src and first row of B is b_tile_src.
    __device__ __forceinline__ void issue(int j, float* stage, const float* a_tile_src, const float* b_tile_src) const {
        if (j < Cfg::kCopiesA) {
            const int rows = j % Cfg::kCopiesPerChunkA, chunk = j / Cfg::kCopiesPerChunkA;
            copy_async_4(stage + a_dst + chunk * Cfg::kChunkA * Cfg::kStrideA + rows * Cfg::kRowStepCopyA,
                         a_tile_src + rows * a_row_step + chunk * Cfg::kChunkA);
        } else {
            const int v = j - Cfg::kCopiesA;
            copy_async_16(stage + b_dst + v * Cfg::kRowStepB * Cfg::kStrideB, b_tile_src + v * b_row_step);
        }
    }
};

// All tiles of k through a kStages-deep pipeline of asynchronous copies. Tile t lives in
// buffer t % kStages, and its copies are issued during tile t - (kStages - 1). One
// __syncthreads() per tile, just before its last step of k: after it, tile t + 1 has
// arrived for all threads (so the fragments of its first step can be read while the last
// step of tile t is computed), and every thread has read all it needs of tile t, so the
// copies issued during tile t + 1 (those of tile t + kStages) may overwrite its buffer.
template <class Cfg>
__device__ __forceinline__ void mainloop_async(float (&acc)[Cfg::kThreadM][Cfg::kThreadN], float* shared,
                                               const float* __restrict__ a, const float* __restrict__ b, int n,
                                               int k, int block_m, int block_n, int a_frag_base, int b_frag_base) {
    constexpr int kSteps = Cfg::kBlockK;
    constexpr int kCopies = Cfg::kCopiesA + Cfg::kVectorsB;  // per thread per tile, A's then B's
    // The copies of a tile are spread over its first kSteps - 1 steps (the last holds
    // the barrier), so that they mix with the multiply-adds instead of arriving at once.
    constexpr int kCopySteps = kSteps - 1;
    constexpr int kLastCopyStep = (kCopies < kCopySteps ? kCopies : kCopySteps) - 1;
    static_assert(kSteps % 2 == 0, "the two sets of fragments alternate across tiles too");

    const int tiles = k / Cfg::kBlockK;  // whole tiles only
    const CopyPlan<Cfg> plan(a, b, n, k, block_m, block_n);
    const std::size_t b_tile_step = static_cast<std::size_t>(Cfg::kBlockK) * n;

    // Prologue: tiles 0 .. kStages - 2 on their way, one group each (empty past the end,
    // so that every tile counts as one group in the waits below).
    const float* a_next = plan.a_src;  // the next tile to copy
    const float* b_next = plan.b_src;
#pragma unroll
    for (int s = 0; s < Cfg::kStages - 1; ++s) {
        if (s < tiles) {
#pragma unroll
            for (int j = 0; j < kCopies; ++j) plan.issue(j, shared + s * Cfg::kFloatsStage, a_next, b_next);
        }
        commit_copies();
        a_next += Cfg::kBlockK;
        b_next += b_tile_step;
    }
    wait_copies<Cfg::kStages - 2>();  // tile 0 has arrived
    __syncthreads();

    Fragments<Cfg> frag[2];  // step p's in frag[p % 2]
    load_fragments<Cfg>(frag[0], shared, a_frag_base, b_frag_base, 0);

    int read = 0, write = Cfg::kStages - 1;  // buffers of tile t and of tile t + kStages - 1
    for (int tile = 0; tile < tiles; ++tile) {
        const bool more = tile + 1 < tiles;                        // the same for every thread
        const bool copy = tile + Cfg::kStages - 1 < tiles;         // likewise
        const int next = read + 1 == Cfg::kStages ? 0 : read + 1;  // buffer of tile t + 1
        const float* stage = shared + read * Cfg::kFloatsStage;
        float* const write_stage = shared + write * Cfg::kFloatsStage;
#pragma unroll
        for (int p = 0; p < kSteps; ++p) {
            if (p == kSteps - 1 && more) {
                // Tile t + 1's group is this thread's (kStages - 1)th most recent: wait for
                // it, then for everyone's.
                wait_copies<Cfg::kStages - 2>();
                __syncthreads();
            }
            if (p + 1 < kSteps)
                load_fragments<Cfg>(frag[(p + 1) % 2], stage, a_frag_base, b_frag_base, p + 1);
            else if (more)
                load_fragments<Cfg>(frag[0], shared + next * Cfg::kFloatsStage, a_frag_base, b_frag_base, 0);
            if (copy) {
#pragma unroll
                for (int j = p; j < kCopies; j += kCopySteps)
                    if (p < kCopySteps) plan.issue(j, write_stage, a_next, b_next);
            }
            if (p == kLastCopyStep) commit_copies();
            multiply_add<Cfg>(acc, frag[p % 2]);
        }
        a_next += Cfg::kBlockK;
        b_next += b_tile_step;
        read = next;
        write = write + 1 == Cfg::kStages ? 0 : write + 1;
    }
}
#endif

// ---- The kernel ----------------------------------------------------------------------

// Blocks start in launch order, a few per SM at a time. Launched row of tiles after row of
// tiles, the blocks running together would share one panel of A but each need a different
// panel of B, all of B in turn; launched in groups of kGroupRows rows of tiles, column by
// column inside a group, they share a few panels of A and of B, which the L2 cache then
// serves to all of them. Returns (row of tiles, column of tiles) for this block of a grid
// of (columns, rows).
constexpr int kGroupRows = 8;

__device__ __forceinline__ int2 tile_of_block() {
    const int tiles_n = static_cast<int>(gridDim.x), tiles_m = static_cast<int>(gridDim.y);
    const int id = static_cast<int>(blockIdx.y) * tiles_n + static_cast<int>(blockIdx.x);
    const int per_group = kGroupRows * tiles_n;
    const int first_row = id / per_group * kGroupRows;
    const int rows_here = min(tiles_m - first_row, kGroupRows);
    const int within = id % per_group;
    return make_int2(first_row + within % rows_here, within / rows_here);
}

// Without kGuarded, C, A and B divide into whole tiles and start on 16-byte boundaries
// (the host checks), and the copies go asynchronously where the GPU can.
template <class Cfg, bool kGuarded>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm)
    matmul_warp_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n,
                      int k) {
    extern __shared__ float4 shared_memory[];  // float4: 16-byte aligned for the vector accesses
    float* const shared = reinterpret_cast<float*>(shared_memory);  // the buffers, one after the other

    const int2 tile_rc = tile_of_block();
    const int block_m = tile_rc.x * Cfg::kBlockM;
    const int block_n = tile_rc.y * Cfg::kBlockN;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    // Where this thread's first 4 x 4 fragment starts inside the block's tile.
    const int thread_m = (warp / Cfg::kWarpsN) * Cfg::kWarpM + (lane / Cfg::kLanesN) * 4;
    const int thread_n = (warp % Cfg::kWarpsN) * Cfg::kWarpN + (lane % Cfg::kLanesN) * 4;

    float acc[Cfg::kThreadM][Cfg::kThreadN];
#pragma unroll
    for (int i = 0; i < Cfg::kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < Cfg::kThreadN; ++j) acc[i][j] = 0.0f;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (!kGuarded) {
        mainloop_async<Cfg>(acc, shared, a, b, n, k, block_m, block_n, thread_m, thread_n);
    } else {
        mainloop_register_staged<Cfg, true>(acc, shared, a, b, m, n, k, block_m, block_n, thread_m, thread_n);
    }
#else
    mainloop_register_staged<Cfg, kGuarded>(acc, shared, a, b, m, n, k, block_m, block_n, thread_m, thread_n);
#endif

    // Each row of a fragment is four adjacent elements of C: one float4 store, and the
    // lanes of a warp store whole contiguous rows of the warp's tile.
#pragma unroll
    for (int fm = 0; fm < Cfg::kFragsM; ++fm) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = block_m + thread_m + fm * Cfg::kFragStrideM + i;
            const float* out = acc[4 * fm + i];
#pragma unroll
            for (int fn = 0; fn < Cfg::kFragsN; ++fn) {
                const int col = block_n + thread_n + fn * Cfg::kFragStrideN;
                const float* v = out + 4 * fn;
                if constexpr (!kGuarded) {
                    *reinterpret_cast<float4*>(c + static_cast<std::size_t>(row) * n + col) =
                        make_float4(v[0], v[1], v[2], v[3]);
                } else if (row < m) {
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (col + j < n) c[static_cast<std::size_t>(row) * n + col + j] = v[j];
                }
            }
        }
    }
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Launches the kernel of configuration Cfg: the fast one when C, A and B divide into
// whole tiles and all three start on 16-byte boundaries, the guarded one otherwise. The
// fast one gets kStages buffers of shared memory from sm_80 on and two before (where it
// stages through registers: more would only leave room for fewer blocks per SM), the
// guarded one two.
template <class Cfg>
void launch(const float* a, const float* b, float* c, int m, int n, int k) {
    const dim3 grid((n + Cfg::kBlockN - 1) / Cfg::kBlockN, (m + Cfg::kBlockM - 1) / Cfg::kBlockM);
    const bool whole_tiles = m % Cfg::kBlockM == 0 && n % Cfg::kBlockN == 0 && k % Cfg::kBlockK == 0 &&
                             aligned_16(a) && aligned_16(b) && aligned_16(c);
    int device = 0, major = 0;
    LABKIT_CHECK(cudaGetDevice(&device));
    LABKIT_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    const std::size_t fast_bytes = (major >= 8 ? Cfg::kStages : 2) * Cfg::kStageBytes;
    constexpr std::size_t kGuardedBytes = 2 * Cfg::kStageBytes;
    // More than 48 KiB of shared memory per block must be asked for, once per kernel.
    if (fast_bytes > 48 * 1024) {
        static const bool opted_in = [fast_bytes] {
            LABKIT_CHECK(cudaFuncSetAttribute(matmul_warp_tiled<Cfg, false>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(fast_bytes)));
            return true;
        }();
        (void)opted_in;
    }
    if constexpr (kGuardedBytes > 48 * 1024) {
        static const bool opted_in = [] {
            LABKIT_CHECK(cudaFuncSetAttribute(matmul_warp_tiled<Cfg, true>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, kGuardedBytes));
            return true;
        }();
        (void)opted_in;
    }
    if (whole_tiles)
        matmul_warp_tiled<Cfg, false><<<grid, Cfg::kThreads, fast_bytes>>>(a, b, c, m, n, k);
    else
        matmul_warp_tiled<Cfg, true><<<grid, Cfg::kThreads, kGuardedBytes>>>(a, b, c, m, n, k);
    LABKIT_CHECK_LAUNCH();
}

// Configurations worth trying (kBlockK, kWarpsM, kWarpsN, kLanesM, kFragsM, kFragsN,
// kStages):
//   a 128 x 256 block tile, 8 warps of 32 x 128, 8 x 16 per thread, k in steps of 16,
//   2 buffers (used: 0.91x cuBLAS FP32 SGEMM at 4096^3 on an H100; 3 buffers the same);
//   a 128 x 128 block tile, 8 x 8 per thread, two blocks per SM: kUseFragsN = 2 (0.83x,
//   0.85x with one block per SM and 2 or 4 buffers);
//   the same with k in steps of 8: kUseBlockK = 8 (slower);
//   warps of 64 x 32 instead: WarpTiling<16, 2, 4, 8, 2, 2, 3> (slower).
// One line each, so that tools/sweep.py can time variants on a new GPU.
constexpr int kUseBlockK = 16;
constexpr int kUseWarpsM = 4;
constexpr int kUseWarpsN = 2;
constexpr int kUseLanesM = 4;
constexpr int kUseFragsM = 2;
constexpr int kUseFragsN = 4;
constexpr int kUseStages = 2;
using Solution = WarpTiling<kUseBlockK, kUseWarpsM, kUseWarpsN, kUseLanesM, kUseFragsM, kUseFragsN, kUseStages>;

}  // namespace
// END SOLUTION
// STARTER: // The tile width: each block computes a kTile x kTile tile of C with one thread per
// STARTER: // element, and copies kTile x kTile tiles of A and B into shared memory.
// STARTER: constexpr int kTile = 32;
// STARTER:
// STARTER: // TODO 1: the lecture's tiled kernel, for any m, n and k. Thread (tx, ty) of block
// STARTER: // (bx, by) computes c[row][col] with row = by * kTile + ty and col = bx * kTile + tx:
// STARTER: //   * Declare the two shared tiles: __shared__ float a_tile[kTile][kTile], b_tile[kTile][kTile];
// STARTER: //   * Loop over the tiles of k: t = 0, 1, ..., ceil(k / kTile) - 1. (k need not be a
// STARTER: //     multiple of kTile: the last tile is partial.)
// STARTER: //       - Load: a_tile[ty][tx] = A[row][t * kTile + tx] and b_tile[ty][tx] =
// STARTER: //         B[t * kTile + ty][col], or 0.0f where that element lies outside A or B
// STARTER: //         (a 0 adds nothing to the sum). A[i][p] is a[i * k + p], B[p][j] is b[p * n + j].
// STARTER: //       - __syncthreads(): the tiles are complete before anyone reads them.
// STARTER: //       - Add a_tile[ty][p] * b_tile[p][tx] for p = 0 .. kTile-1 to a running sum.
// STARTER: //       - __syncthreads(): everyone is done with the tiles before they are overwritten.
// STARTER: //     Every thread takes part in every load and every __syncthreads(), even one whose
// STARTER: //     row or col lies outside C.
// STARTER: //   * Store the sum to c[row * n + col], only if row < m and col < n.
// STARTER: __global__ void matmul_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
// STARTER:     // your code here
// STARTER:     (void)a; (void)b; (void)c; (void)m; (void)n; (void)k;
// STARTER: }

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    // BEGIN SOLUTION
    launch<Solution>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    // END SOLUTION
    // STARTER: // TODO 2: one block of kTile x kTile threads per tile of C, and enough blocks to
    // STARTER: // cover all of C: ceil(n / kTile) across (x: columns), ceil(m / kTile) down (y:
    // STARTER: // rows). The launch goes to the default stream and is checked right after; do not
    // STARTER: // synchronise with the host or allocate memory here.
    // STARTER: const dim3 block(kTile, kTile);
    // STARTER: const dim3 grid(1, 1);  // TODO: enough blocks for all of C
    // STARTER: matmul_tiled_kernel<<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    // STARTER: LABKIT_CHECK_LAUNCH();
    // STARTER: // Once it passes every case, make it faster, one step at a time (the ladder's rungs):
    // STARTER: // several outputs per thread from registers (unroll-and-jam), a transposed A tile and
    // STARTER: // float4 loads, then warp tiles and double-buffered shared memory.
}
