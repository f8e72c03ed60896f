/* Parameter structs and constants shared by the host and the kernels. Plain C.
 * The Rust side is generated from this file by bindgen into src/gpu/c_params.rs
 * (committed); after a change here run
 * `KERNPACK_BLESS=1 cargo test --test params_bindings` and commit the result. */
#ifndef KERNPACK_PARAMS_H
#define KERNPACK_PARAMS_H

#include <stdint.h>

/* Lomb-Scargle output modes, SciPy's `normalize` argument. */
enum {
    KP_LS_POWER = 0,     /* (A^2) N / 4 */
    KP_LS_NORMALIZE = 1, /* power relative to the residuals of a constant model, in [0, 1] */
    KP_LS_AMPLITUDE = 2  /* complex amplitude and phase, interleaved (re, im) */
};

/* Frequencies each thread of lombscargle_direct handles per pass; the host sizes
 * the grid with it (a mismatch would cost speed, never correctness: the kernel grid-strides). */
#define KP_LS_FREQS_PER_THREAD 2

/* Frequencies each thread of lombscargle_uniform carries through its recurrence
 * (fewer with a floating mean, which needs two more sums per frequency). */
#define KP_LS_UNIFORM_FREQS_PER_THREAD 16
#define KP_LS_UNIFORM_FREQS_PER_THREAD_FM 8

/* A uniform grid of angular frequencies: f0 + k df, k = 0 .. nf-1. */
typedef struct kp_ls_grid {
    double f0;
    double df;
} kp_ls_grid;

typedef struct kp_ls_params {
    int64_t nx;            /* samples (a batch: the samples readable at t, y and w) */
    int64_t nf;            /* frequencies */
    int32_t normalize;     /* KP_LS_* */
    int32_t floating_mean; /* fit an offset per frequency */
    int32_t precenter;     /* subtract mean(y) first (SciPy's legacy option) */
    int32_t has_weights;   /* 0: every weight is 1 and the weights pointer is ignored */
} kp_ls_params;

/* Per-series statistics, written on the device by lombscargle_prepare and read by
 * lombscargle_direct, so a device-pointer call needs no host round trip. */
typedef struct kp_ls_stats {
    double t_shift;  /* mean(t): times are shifted by it, the periodogram is shift-invariant */
    double inv_wsum; /* 1 / sum(w): weights are normalised to sum to 1, as in SciPy */
    double y_center; /* mean(y) when precenter, else 0 */
    double Y;        /* sum(w (y - y_center)) / sum(w) */
    double YY;       /* sum(w (y - y_center)^2) / sum(w) */
    double YY_about_Y; /* sum(w (y - y_center - Y)^2) / sum(w): YY - Y^2 without its cancellation */
} kp_ls_stats;

/* Box filter boundary modes: scipy.ndimage.uniform_filter's, plus an
 * "interior" mode (only points whose whole window lies inside are filtered; the
 * others are copied from the input). */
enum {
    KP_BOX_REFLECT = 0,  /* d c b a | a b c d | d c b a */
    KP_BOX_CONSTANT = 1, /* k k k k | a b c d | k k k k  (k = cval) */
    KP_BOX_NEAREST = 2,  /* a a a a | a b c d | d d d d */
    KP_BOX_MIRROR = 3,   /*   d c b | a b c d | c b a   */
    KP_BOX_WRAP = 4,     /* a b c d | a b c d | a b c d */
    KP_BOX_INTERIOR = 5
};

/* Output rows each warp of the box filter's windows 3 to 9 walks down; a block
 * of 8 warps covers 8 such strips, one above the other. */
#define KP_BOX_STRIP_ROWS 8

/* One 2D box filter: out = mean of the size x size window around each point
 * (size = 2 radius + 1). Pitches are in elements. */
typedef struct kp_box_params {
    int64_t rows;
    int64_t cols;
    int64_t in_pitch;
    int64_t out_pitch;
    int64_t tiles_x;  /* tiles per row of the grid: block b is tile (b % tiles_x, b / tiles_x) */
    double cval;      /* the value outside, for KP_BOX_CONSTANT */
    double scale;     /* 1 / size^2 */
    int32_t radius;
    int32_t mode;     /* KP_BOX_* */
} kp_box_params;

/* The running-sum box filter's segments: a warp holds 32 K consecutive
 * columns of the extended image (its output columns plus size_x - 1 halo
 * columns), K = KP_BOX_RUN_K_NARROW (box_filter_running) or
 * KP_BOX_RUN_K_WIDE (box_filter_running_wide, windows wider than the narrow
 * segment's size_x - 1 + 128); KP_BOX_RUN_WARPS warps per block. */
#define KP_BOX_RUN_K_NARROW 9
#define KP_BOX_RUN_K_WIDE 33
#define KP_BOX_RUN_WARPS 4

/* The band box filter (box_filter_band, windows whose ring of size_y rows
 * fits in shared memory): KP_BOX_BAND_THREADS threads per block own a band of
 * KP_BOX_BAND_COLS x KP_BOX_BAND_THREADS columns (outputs plus the size_x - 1
 * halo) and walk down a chunk of rows KP_BOX_BAND_ROWS at a time; it takes
 * kp_box_run_params (tiles_x: bands per row, chunk_rows: rows per block). */
#define KP_BOX_BAND_THREADS 256
#define KP_BOX_BAND_COLS 1
#define KP_BOX_BAND_ROWS 8

/* One 2D box filter of any window (box_filter_running): out = mean of the
 * size_y x size_x window of rows y - before_y .. y - before_y + size_y - 1
 * and columns likewise (SciPy's uniform_filter with an origin). */
typedef struct kp_box_run_params {
    int64_t rows;
    int64_t cols;
    int64_t in_pitch;
    int64_t out_pitch;
    int64_t tiles_x;    /* strips per row: warp w is strip w % tiles_x, chunk w / tiles_x */
    int64_t chunk_rows; /* output rows per warp */
    int64_t size_y;
    int64_t size_x;
    int64_t before_y;
    int64_t before_x;
    double cval;        /* the value outside, for KP_BOX_CONSTANT (0 when pad_outside) */
    double pad_cval;    /* with pad_outside: added to every output whose window reaches outside */
    double scale;       /* 1 / (size_y size_x) */
    int32_t mode;       /* KP_BOX_* */
    int32_t pad_outside;
} kp_box_run_params;

/* One Lorenz 96 run (both kernels of csrc/lorenz.cu): the forcing (one F, or
 * per site in the state after X when `forced`), the noise W = noise * N(0, 1)
 * per member, step and site (noise = s sqrt(dt); 0: none) drawn for member
 * first_member + m and step first_step + s under `seed` (a run in segments,
 * segment s starting after first_step steps, draws the noise of one run),
 * and a trajectory frame every `every` steps (0: none). */
typedef struct kp_l96_run {
    double forcing;
    double dt;
    double noise;
    uint64_t seed;
    int64_t first_member;
    int64_t steps;
    int64_t every;
    int64_t first_step;
    int32_t n;
    int32_t forced;
} kp_l96_run;

/* The time span and step control of an adaptive Lorenz 63 run
 * (lorenz63_dopri5 of csrc/lorenz63.cu; SciPy RK45's meaning). */
typedef struct kp_l63_adaptive {
    double t0;
    double t_end;
    double rtol;       /* at least 100 f64 epsilons */
    double atol;
    double first_step; /* 0: chosen per member */
    double max_step;   /* infinity for none */
    int64_t frames;    /* save times */
    uint32_t max_steps;
    uint32_t pad;
} kp_l63_adaptive;

/* The 1-D correlation along one axis (csrc/correlate.cu; Gaussian filters
 * are passes of it). The weights travel by value as a kernel parameter (in
 * the constant bank), KP_CORRELATE_MAX_TAPS per launch: a longer filter runs
 * as launches over slices of its taps, each adding its slice to the output.
 * Each thread computes KP_CORRELATE_OUTPUTS consecutive outputs along the
 * axis; blocks of KP_CORRELATE_WARPS warps. */
#define KP_CORRELATE_MAX_TAPS 256
#define KP_CORRELATE_OUTPUTS 8
#define KP_CORRELATE_WARPS 4

/* The array is outer x n x inner (row-major, contiguous), filtered along n:
 * out[o][i][c] (+)= sum_j w[j] in[o][extend(i + first + j)][c], j < taps. */
typedef struct kp_correlate_params {
    int64_t outer;
    int64_t n;
    int64_t inner;
    int64_t first;      /* the input index of tap 0, relative to the output's */
    int64_t taps;       /* of this launch: 1 .. KP_CORRELATE_MAX_TAPS */
    int64_t chunk;      /* outputs along n per thread (strided kernel; a multiple of KP_CORRELATE_OUTPUTS) */
    int64_t units;      /* work items: warps of correlate_lines, threads of correlate_strided */
    double cval;        /* the value outside, for KP_BOX_CONSTANT */
    int32_t mode;       /* KP_BOX_* (KP_BOX_INTERIOR is never passed) */
    int32_t accumulate; /* 1: add to the output's contents (the later slices of a long filter) */
} kp_correlate_params;

/* Rank filters (csrc/rank.cu: median, percentile and rank filters over a
 * footprint). The array is up to 4-D, n[0] x n[1] x n[2] x n[3] row-major
 * (leading axes of size 1 for fewer), one thread per output along n[3].
 * Values are ordered through unsigned keys of their width (KP_RANK_*:
 * how the bits map to keys). A 1-D grid strides over work units: a block
 * of threads along n[3] x a segment of rows along n[2] x one (n[0], n[1]). The footprint's points travel as a device
 * table of 5 int64 each: the flat offset, then the offset along each axis. */
#define KP_RANK_UNSIGNED 0
#define KP_RANK_SIGNED 1
#define KP_RANK_FLOAT 2
/* The sorting networks' capacities: a footprint of up to the largest sorts
 * its window in registers, padded to the next capacity. */
#define KP_RANK_NETWORK_MAX 81
#define KP_RANK_NETWORK_MAX_64 25
/* Threads per block: the networks', the digit kernel's (a 256-bin
 * histogram per thread in shared memory, uint32 counts) and the sliding
 * kernel's (uint16 counts, footprints of at most 65535 points). */
#define KP_RANK_NETWORK_THREADS 64
#define KP_RANK_DIGIT_THREADS 32
#define KP_RANK_SLIDING_THREADS 64

typedef struct kp_rank_params {
    int64_t n[4];
    int64_t lo[4];     /* along axis a, outputs lo[a] <= i < hi[a] read only inside the array */
    int64_t hi[4];
    int64_t first[4];  /* sliding kernel: the offset of the box footprint's first point per axis */
    int64_t size[4];   /* sliding kernel: the box footprint's size per axis */
    int64_t count;     /* footprint points */
    int64_t rank;      /* 0 .. count - 1 */
    int64_t segment;   /* rows (along n[2]) per work unit */
    int64_t segments;  /* ceil(n[2] / segment) */
    int64_t xblocks;   /* blocks along n[3]: ceil(n[3] / threads per block) */
    int64_t units;     /* xblocks x segments x n[0] x n[1]: the grid strides over them */
    uint64_t cval;     /* the constant's bits, zero-extended from the element's width */
    int32_t mode;      /* KP_BOX_* (KP_BOX_INTERIOR is never passed) */
    int32_t kind;      /* KP_RANK_* */
    int32_t width;     /* bytes per element: 1, 2, 4 (the b32 kernels) or 8 (b64) */
    int32_t unused;
} kp_rank_params;


/* ---- csrc/uniform.cu: one pass of the N-D box filter along an axis ---- */
#define KP_UNIFORM_THREADS 256
#define KP_UNIFORM_LINE_OUTPUTS 16    /* outputs per lane of uniform_lines */
#define KP_UNIFORM_LINES_MAX_SIZE 1024 /* larger windows along a contiguous axis run uniform_strided */

typedef struct kp_uniform_params {
    int64_t outer;     /* the array along the pass's axis: outer x n x inner, row-major */
    int64_t n;
    int64_t inner;
    int64_t first;     /* output i averages inputs i + first .. i + first + size - 1 */
    int64_t size;      /* 2 .. 2^31 - 1 */
    int64_t chunk;     /* uniform_strided: outputs per work unit along the axis */
    int64_t units;     /* work units: threads (strided) or warps (lines); the grid strides over them */
    int64_t tile;      /* uniform_lines: shared-memory values per warp */
    uint64_t cval;     /* the constant's bits, zero-extended from the element's width */
    int32_t mode;      /* KP_BOX_* (KP_BOX_INTERIOR is never passed) */
    int32_t width;     /* bytes per element: 1, 2 or 4 (the _int kernels), 8 (_int64) */
    int32_t is_signed; /* integers: 1 signed, 0 unsigned */
    int32_t unused;
} kp_uniform_params;

/* ---- csrc/bls.cu: the phase grid of a Box Least Squares search ---- */
typedef struct kp_bls_params {
    double bin;          /* phase bin width: min(duration) / oversample */
    int64_t max_bins;    /* bins of the longest period; a histogram holds max_bins + 1 */
    int32_t oversample;  /* >= 1 */
    int32_t snr;         /* objective: 1 signal-to-noise, 0 log likelihood */
    int32_t ndurations;  /* >= 1 */
    int32_t unused;
} kp_bls_params;

/* ---- csrc/phasefold.cu: a PDM or conditional-entropy fold ---- */
typedef struct kp_phasefold_params {
    int64_t nseries;
    int64_t nf;            /* frequencies */
    int64_t cells;         /* accumulators per thread: PDM 2 x phase_bins, CE phase_bins x mag_bins */
    int32_t cell_bytes;    /* 8 (PDM, f64 sums) or 4 (CE, u32 counts) */
    int32_t statistic;     /* 0 PDM, 1 conditional entropy */
    int32_t phase_bins;
    int32_t mag_bins;      /* CE */
    int32_t phase_overlap; /* CE */
    int32_t mag_overlap;   /* CE */
    int32_t in_shared;     /* 1: accumulators in dynamic shared memory; 0: in scratch */
    int32_t out_f32;       /* 1: out holds float, 0: double */
} kp_phasefold_params;

#endif
