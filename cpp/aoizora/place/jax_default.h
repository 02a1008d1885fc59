// The baseline placement: a C++ port of what jax.experimental.mesh_utils.create_device_mesh
// (jax 0.10.2, jax/_src/mesh_utils.py) and jax.make_mesh pick for a device kind and mesh shape.
// Devices are the topology's chips; their order as JAX sorts them (reversed coords) is the chip
// id order. Not ported: the TPU7x handler (JAX exposes two devices per 7x chip) and
// contiguous_submeshes; v2/v3 and GPUs are not in the catalog.
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
