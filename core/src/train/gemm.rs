//! A bounds-checked safe wrapper over `matrixmultiply::sgemm`, the only unsafe call in texset.

/// A row-major-or-strided matrix view: `rows × cols`, element `(r, c)` at `r * row_stride + c * col_stride`.
#[derive(Clone, Copy, Debug)]
pub struct Strides {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Step between rows.
    pub row_stride: usize,
    /// Step between columns.
    pub col_stride: usize,
}

impl Strides {
    /// A dense row-major `rows × cols` matrix.
    #[must_use]
    pub fn row_major(rows: usize, cols: usize) -> Self {
        Self { rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// The transpose of a dense row-major `rows × cols` matrix (a `cols × rows` view).
    #[must_use]
    pub fn transposed(rows: usize, cols: usize) -> Self {
        Self { rows: cols, cols: rows, row_stride: 1, col_stride: cols }
    }

    fn fits(&self, len: usize) -> bool {
        self.rows == 0 || self.cols == 0 || (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride < len
    }
}

/// `c = a · b + beta · c`, with `a` `m × k`, `b` `k × n`, `c` `m × n`.
///
/// # Panics
/// When the shapes disagree or a view reaches past its slice (a programming error in the caller,
/// checked before the unsafe call so it can never read or write out of bounds).
pub fn gemm(a: &[f32], sa: Strides, b: &[f32], sb: Strides, beta: f32, c: &mut [f32], sc: Strides) {
    assert!(sa.cols == sb.rows && sa.rows == sc.rows && sb.cols == sc.cols, "gemm shape mismatch");
    assert!(sa.fits(a.len()) && sb.fits(b.len()) && sc.fits(c.len()), "gemm view out of bounds");
    if sc.rows == 0 || sc.cols == 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: the asserts above prove every element the views address lies inside its slice, and
    // `c` is borrowed mutably, so it aliases neither `a` nor `b`.
    unsafe {
        matrixmultiply::sgemm(
            sa.rows,
            sa.cols,
            sb.cols,
            1.0,
            a.as_ptr(),
            sa.row_stride as isize,
            sa.col_stride as isize,
            b.as_ptr(),
            sb.row_stride as isize,
            sb.col_stride as isize,
            beta,
            c.as_mut_ptr(),
            sc.row_stride as isize,
            sc.col_stride as isize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_naive_product_with_transposes() {
        let a: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect(); // 2×3
        let b: Vec<f32> = (0..12).map(|i| (i as f32).sin()).collect(); // 4×3, used transposed
        let mut c = vec![1.0; 8]; // 2×4
        gemm(&a, Strides::row_major(2, 3), &b, Strides::transposed(4, 3), 1.0, &mut c, Strides::row_major(2, 4));
        for r in 0..2 {
            for col in 0..4 {
                let want: f32 = 1.0 + (0..3).map(|k| a[r * 3 + k] * b[col * 3 + k]).sum::<f32>();
                assert!((c[r * 4 + col] - want).abs() < 1e-5);
            }
        }
    }
}
