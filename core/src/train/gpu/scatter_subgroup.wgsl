// The latent gradients summed per subgroup before their atomics: what `scatter` calls in place of
// `scatter_feature` and `scatter_corner` where the device has subgroups and the draws come in
// rows (wgsl.rs appends this file after train.wgsl; the device's SUBGROUP feature allows its
// functions). In a row
// of neighbours, runs of adjacent lanes add to the same grid value; each run's sum goes to the
// fixed-point accumulators in one atomic per word, from its last lane. The sums are of the 32.32
// integers `fx_add` adds, so the accumulators end with the same bits as without this (integer
// addition is exact and commutes): only the number of atomics changes.
//
// Every lane of the subgroup calls these (no lane skips a zero gradient; it adds zero), in the
// uniform control flow of `scatter`: every invocation of `fwd_bwd` runs, and its workgroup fills
// its subgroups but perhaps the last, whose missing lanes are the highest.

// This invocation's lane and its subgroup's active lanes (`lanes_init`, at `scatter`'s start).
var<private> lane: u32;
var<private> lanes: u32;

fn lanes_init() {
    lane = subgroupExclusiveAdd(1u);
    lanes = subgroupAdd(1u);
}

// `fx_add`'s words for `value`: (positive low, positive high, negative low, negative high), the
// side its sign does not take zero.
fn fx_words(value: f32) -> vec4<u32> {
    let m = min(abs(value), 1e9);
    let whole = floor(m);
    let words = vec2<u32>(u32((m - whole) * 4294967296.0), u32(whole));
    if value < 0.0 {
        return vec4<u32>(0u, 0u, words);
    }
    return vec4<u32>(words, 0u, 0u);
}

// Two 64-bit integers as (low, high) words, added modulo 2^64.
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let low = a.x + b.x;
    return vec2<u32>(low, a.y + b.y + select(0u, 1u, low < a.x));
}

// Adds the 64-bit words `w` (`fx_words`) to grid value j's accumulators, as `fx_add` adds its.
fn fx_add_words(j: u32, w: vec4<u32>) {
    for (var side = 0u; side < 2u; side++) {
        let low = w[2u * side];
        let high = w[2u * side + 1u];
        if low != 0u || high != 0u {
            let at = 4u * j + 2u * side;
            let old = atomicAdd(&grid_grad[at], low);
            let carried = high + select(0u, 1u, old + low < old);
            if carried != 0u {
                atomicAdd(&grid_grad[at + 1u], carried);
            }
        }
    }
}

// Adds `value` to grid value j, summed first over the run of adjacent lanes that add to j too
// (a segmented inclusive scan: a run's lanes are numbered by the heads before them, and each lane
// adds the partial `d` lanes down while that lane is of its run).
fn scatter_add(j: u32, value: f32) {
    var words = fx_words(value);
    let head = lane == 0u || subgroupShuffleUp(j, 1u) != j;
    let run = subgroupInclusiveAdd(select(0u, 1u, head));
    for (var d = 1u; d < lanes; d <<= 1u) {
        let other = subgroupShuffleUp(words, d);
        let other_run = subgroupShuffleUp(run, d);
        if lane >= d && other_run == run {
            words = vec4<u32>(add64(words.xy, other.xy), add64(words.zw, other.zw));
        }
    }
    let next_run = subgroupShuffleDown(run, 1u);
    if lane + 1u == lanes || next_run != run {
        fx_add_words(j, words);
    }
}

// `scatter_feature`, summed per subgroup.
fn scatter_feature_subgroup(grid: GridAt, k: u32, d: f32) {
    for (var corner = 0u; corner < 4u; corner++) {
        scatter_add(grid.base + grid.corners.cells[corner] * grid.channels + k, grid.corners.weights[corner] * d);
    }
}

// `scatter_corner`, summed per subgroup.
fn scatter_corner_subgroup(grid: GridAt, k: u32, corner: u32, d: f32) {
    scatter_add(grid.base + grid.corners.cells[corner] * grid.channels + k, grid.corners.weights[corner] * d);
}
