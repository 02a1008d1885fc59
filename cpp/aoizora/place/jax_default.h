// The baseline placement: a C++ port of what jax.experimental.mesh_utils.create_device_mesh
// (jax 0.10.2, jax/_src/mesh_utils.py) and jax.make_mesh pick for a device kind and mesh shape.
// Devices are the topology's devices (on TPU7x two per chip; the physical mesh then has a
// fourth, core axis, as in _get_physical_tpu_mesh); their order as JAX sorts them is the
// device id order. Not ported: contiguous_submeshes; v2/v3 and GPUs are not in the catalog.
#pragma once

#include "aoizora/base/status.h"
#include "aoizora/place/axis_order.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

// create_device_mesh(mesh_shape, devices, allow_split_physical_axes=allow_split).
Result<Placement> create_device_mesh(const topo::Topology& t, const MeshShape& mesh,
                                     bool allow_split_physical_axes);

// jax.make_mesh(mesh_shape, ...): create_device_mesh with allow_split_physical_axes set only
// for v5e ("TPU v5 lite"). The "default" placement of the paper's baselines.
Result<Placement> default_placement(const topo::Topology& t, const MeshShape& mesh);

}  // namespace aoizora::place
