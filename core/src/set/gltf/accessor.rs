//! Reading accessors, every range checked against its buffer view (and the view against its
//! buffer) before a value is read or anything is allocated for them.

use super::source::{LoadedAsset, view_bytes};
use super::{GltfFault, MAX_ASSET_VERTICES};
use gltf::accessor::DataType;

/// An accessor's elements in its buffer view, range-checked.
struct Elements<'a> {
    /// From the first element's first byte to the last element's last.
    data: &'a [u8],
    /// Bytes from one element to the next.
    stride: usize,
}

/// A fault of accessor `accessor`.
fn accessor_fault(accessor: &gltf::Accessor<'_>, reason: String) -> GltfFault {
    GltfFault::Accessor { accessor: accessor.index(), reason }
}

/// The bytes of `accessor`'s elements (`None` for a sparse accessor without a view).
fn elements<'a>(asset: &'a LoadedAsset, accessor: &gltf::Accessor<'_>) -> Result<Option<Elements<'a>>, GltfFault> {
    let Some(view) = accessor.view() else { return Ok(None) };
    let bytes = view_bytes(asset, &view)?;
    let element_bytes = accessor.size();
    let stride = view.stride().unwrap_or(element_bytes);
    if stride < element_bytes {
        return Err(accessor_fault(accessor, format!("byteStride {stride} is under its element size of {element_bytes} bytes")));
    }
    let (offset, count) = (accessor.offset(), accessor.count());
    let span = match count {
        0 => Some(0),
        _ => (count - 1).checked_mul(stride).and_then(|s| s.checked_add(element_bytes)),
    };
    let end = span.and_then(|s| s.checked_add(offset));
    match end.and_then(|end| bytes.get(offset..end)) {
        Some(data) => Ok(Some(Elements { data, stride })),
        None => Err(GltfFault::AccessorOutOfRange {
            accessor: accessor.index(),
            view: view.index(),
            end_bytes: (count as u64).saturating_mul(stride as u64).saturating_add(offset as u64),
            view_bytes: bytes.len() as u64,
        }),
    }
}

/// One component's stored value at byte `at`, as f64 (exact for every component type).
fn component(data: &[u8], at: usize, data_type: DataType) -> Option<f64> {
    let bytes2 = || data.get(at..at + 2).and_then(|b| <[u8; 2]>::try_from(b).ok());
    let bytes4 = || data.get(at..at + 4).and_then(|b| <[u8; 4]>::try_from(b).ok());
    Some(match data_type {
        DataType::I8 => f64::from(i8::from_le_bytes([*data.get(at)?])),
        DataType::U8 => f64::from(*data.get(at)?),
        DataType::I16 => f64::from(i16::from_le_bytes(bytes2()?)),
        DataType::U16 => f64::from(u16::from_le_bytes(bytes2()?)),
        DataType::U32 => f64::from(u32::from_le_bytes(bytes4()?)),
        DataType::F32 => f64::from(f32::from_le_bytes(bytes4()?)),
    })
}

/// `accessor`'s values, `components` per element, in stored units: its view's elements (zeros
/// without a view) with its sparse substitutions applied.
fn values(asset: &LoadedAsset, accessor: &gltf::Accessor<'_>, components: usize) -> Result<Vec<f64>, GltfFault> {
    let (count, data_type) = (accessor.count(), accessor.data_type());
    let size = data_type.size();
    let mut out = match elements(asset, accessor)? {
        Some(elements) => {
            let mut out = Vec::with_capacity(count * components);
            for i in 0..count {
                for c in 0..components {
                    let value = component(elements.data, i * elements.stride + c * size, data_type);
                    out.push(value.ok_or_else(|| accessor_fault(accessor, "element outside its data".into()))?);
                }
            }
            out
        }
        // Nothing in the file bounds a view-less (all-zero, sparse) accessor's count: the
        // asset's vertex limit does, a quarter of it (f64 values, up to four per element).
        None if count <= MAX_ASSET_VERTICES / 4 => vec![0.0; count * components],
        None => return Err(GltfFault::TooLarge(format!("accessor {} of {count} elements and no buffer view", accessor.index()))),
    };
    if let Some(sparse) = accessor.sparse() {
        apply_sparse(asset, accessor, &sparse, components, &mut out)?;
    }
    Ok(out)
}

/// Writes a sparse accessor's substitutions over `out`.
fn apply_sparse(
    asset: &LoadedAsset,
    accessor: &gltf::Accessor<'_>,
    sparse: &gltf::accessor::sparse::Sparse<'_>,
    components: usize,
    out: &mut [f64],
) -> Result<(), GltfFault> {
    let n = sparse.count();
    let (indices, values) = (sparse.indices(), sparse.values());
    let index_type = match indices.index_type() {
        gltf::accessor::sparse::IndexType::U8 => DataType::U8,
        gltf::accessor::sparse::IndexType::U16 => DataType::U16,
        gltf::accessor::sparse::IndexType::U32 => DataType::U32,
    };
    let index_bytes = view_bytes(asset, &indices.view())?;
    let value_bytes = view_bytes(asset, &values.view())?;
    let element_bytes = accessor.size();
    let size = accessor.data_type().size();
    for k in 0..n {
        let at = k.checked_mul(index_type.size()).and_then(|a| a.checked_add(indices.offset()));
        let target = at.and_then(|at| component(index_bytes, at, index_type));
        let target = target.ok_or_else(|| accessor_fault(accessor, format!("sparse index {k} outside its buffer view")))? as usize;
        if target >= accessor.count() {
            return Err(accessor_fault(accessor, format!("sparse index {target} beyond its count of {}", accessor.count())));
        }
        for c in 0..components {
            let at = k.checked_mul(element_bytes).and_then(|a| a.checked_add(values.offset() + c * size));
            let value = at.and_then(|at| component(value_bytes, at, accessor.data_type()));
            let value = value.ok_or_else(|| accessor_fault(accessor, format!("sparse value {k} outside its buffer view")))?;
            if let Some(slot) = out.get_mut(target * components + c) {
                *slot = value;
            }
        }
    }
    Ok(())
}

/// A float attribute of `N` components (`VEC2`, `VEC3`, `VEC4`): floats, or normalised integers
/// mapped to [0, 1] (unsigned) or [-1, 1] (signed) as glTF defines.
pub(super) fn read_vectors<const N: usize>(
    asset: &LoadedAsset,
    accessor: &gltf::Accessor<'_>,
    what: &str,
) -> Result<Vec<[f32; N]>, GltfFault> {
    let dims = accessor.dimensions().multiplicity();
    if dims != N {
        return Err(accessor_fault(accessor, format!("{what} needs {N} components per element, it has {dims}")));
    }
    let scale = match (accessor.data_type(), accessor.normalized()) {
        (DataType::F32, _) => None,
        (DataType::U8, true) => Some((255.0, 0.0)),
        (DataType::U16, true) => Some((65535.0, 0.0)),
        (DataType::I8, true) => Some((127.0, -1.0)),
        (DataType::I16, true) => Some((32767.0, -1.0)),
        (data_type, normalized) => {
            let normalized = if normalized { "normalised " } else { "" };
            return Err(accessor_fault(accessor, format!("{what} cannot be {normalized}{data_type:?} (floats or normalised integers)")));
        }
    };
    let raw = values(asset, accessor, N)?;
    Ok(raw
        .chunks_exact(N)
        .map(|chunk| {
            let mut v = [0.0f32; N];
            for (out, &value) in v.iter_mut().zip(chunk) {
                *out = match scale {
                    None => value as f32,
                    Some((max, floor)) => (value / max).max(floor) as f32,
                };
            }
            v
        })
        .collect())
}

/// A primitive's indices: `SCALAR` unsigned bytes, shorts or ints.
pub(super) fn read_indices(asset: &LoadedAsset, accessor: &gltf::Accessor<'_>) -> Result<Vec<u32>, GltfFault> {
    let dims = accessor.dimensions().multiplicity();
    let integer = matches!(accessor.data_type(), DataType::U8 | DataType::U16 | DataType::U32);
    if dims != 1 || !integer || accessor.normalized() {
        return Err(accessor_fault(
            accessor,
            format!("indices must be scalar unsigned integers, found {dims} × {:?}", accessor.data_type()),
        ));
    }
    Ok(values(asset, accessor, 1)?.into_iter().map(|v| v as u32).collect())
}
