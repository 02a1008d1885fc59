// Real StableHLO text lowered by jax 0.10.2 from aoizora.probes.PROBES on compile-only
// v5e:2x4 devices (mesh data=2 x model=4), with Shardy (default) and with
// jax_use_shardy_partitioner=False (GSPMD mhlo.sharding strings). Regenerate with
// `fn.lower(*args).as_text()` if jax changes its printing.
#pragma once

namespace aoizora::shlo::testdata {

inline constexpr const char* kMatmul = R"mlir(module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<1024x2048xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}, %arg1: tensor<2048x2048xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}, %arg2: tensor<2048x1024xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}) -> (tensor<1024x1024xbf16> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<1024x2048xbf16>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"data"}, {"model"}]> : tensor<1024x2048xbf16>
    %2 = stablehlo.dot_general %1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xbf16>, tensor<2048x1024xbf16>) -> tensor<1024x1024xbf16>
    return %2 : tensor<1024x1024xbf16>
  }
}
)mlir";

inline constexpr const char* kRingAllToAll = R"mlir(module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<256x2048xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}) -> (tensor<128x2048xbf16> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"data"}, {"model"}]>] out_shardings=[<@mesh, [{}, {"model"}]>] manual_axes={"data", "model"} (%arg1: tensor<128x512xbf16>) {
      %1 = "stablehlo.collective_permute"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
      %2 = "stablehlo.all_to_all"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, split_count = 4 : i64, split_dimension = 1 : i64}> : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
      %3 = "stablehlo.all_reduce"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<bf16>, %arg3: tensor<bf16>):
        %4 = stablehlo.add %arg2, %arg3 : tensor<bf16>
        stablehlo.return %4 : tensor<bf16>
      }) : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
      sdy.return %3 : tensor<128x512xbf16>
    } : (tensor<256x2048xbf16>) -> tensor<128x2048xbf16>
    return %0 : tensor<128x2048xbf16>
  }
}
)mlir";

inline constexpr const char* kLayersScan = R"mlir(module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<512x1024xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x1024x4096xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"model"}]>}, %arg2: tensor<4x4096x1024xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}, {}]>}) -> (tensor<512x1024xbf16> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %arg2, %iterArg_1 = %c, %iterArg_2 = %arg0) : tensor<4x1024x4096xbf16>, tensor<4x4096x1024xbf16>, tensor<i32>, tensor<512x1024xbf16>
    cond {
      %c_3 = stablehlo.constant dense<4> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_1, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_1) : (tensor<4x1024x4096xbf16>, tensor<i32>) -> tensor<1024x4096xbf16>
      %2 = func.call @dynamic_index_in_dim_0(%iterArg_0, %iterArg_1) : (tensor<4x4096x1024xbf16>, tensor<i32>) -> tensor<4096x1024xbf16>
      %3 = func.call @closed_call(%iterArg_2, %1, %2) : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<512x1024xbf16>
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_1, %c_3 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_0, %4, %3 : tensor<4x1024x4096xbf16>, tensor<4x4096x1024xbf16>, tensor<i32>, tensor<512x1024xbf16>
    }
    return %0#3 : tensor<512x1024xbf16>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<4x1024x4096xbf16>, %arg1: tensor<i32>) -> tensor<1024x4096xbf16> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 1024, 4096] : (tensor<4x1024x4096xbf16>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x1024x4096xbf16>
    %1 = stablehlo.reshape %0 : (tensor<1x1024x4096xbf16>) -> tensor<1024x4096xbf16>
    return %1 : tensor<1024x4096xbf16>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<4x4096x1024xbf16>, %arg1: tensor<i32>) -> tensor<4096x1024xbf16> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 4096, 1024] : (tensor<4x4096x1024xbf16>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4096x1024xbf16>
    %1 = stablehlo.reshape %0 : (tensor<1x4096x1024xbf16>) -> tensor<4096x1024xbf16>
    return %1 : tensor<4096x1024xbf16>
  }
  func.func private @closed_call(%arg0: tensor<512x1024xbf16>, %arg1: tensor<1024x4096xbf16>, %arg2: tensor<4096x1024xbf16>) -> tensor<512x1024xbf16> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<512x4096xbf16>
    %1 = stablehlo.multiply %0, %0 : tensor<512x4096xbf16>
    %2 = stablehlo.multiply %1, %0 : tensor<512x4096xbf16>
    %cst = stablehlo.constant dense<4.467770e-02> : tensor<bf16>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<512x4096xbf16>
    %4 = stablehlo.multiply %3, %2 : tensor<512x4096xbf16>
    %5 = stablehlo.add %0, %4 : tensor<512x4096xbf16>
    %cst_0 = stablehlo.constant dense<7.968750e-01> : tensor<bf16>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<512x4096xbf16>
    %7 = stablehlo.multiply %6, %5 : tensor<512x4096xbf16>
    %8 = stablehlo.tanh %7 : tensor<512x4096xbf16>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<bf16>) -> tensor<512x4096xbf16>
    %10 = stablehlo.add %9, %8 : tensor<512x4096xbf16>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<bf16>
    %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<bf16>) -> tensor<512x4096xbf16>
    %12 = stablehlo.multiply %11, %10 : tensor<512x4096xbf16>
    %13 = stablehlo.multiply %0, %12 : tensor<512x4096xbf16>
    %14 = stablehlo.dot_general %13, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<512x1024xbf16>
    %15 = stablehlo.add %arg0, %14 : tensor<512x1024xbf16>
    return %15 : tensor<512x1024xbf16>
  }
}
)mlir";

inline constexpr const char* kMatmulGspmd = R"mlir(module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1024x2048xbf16> {mhlo.sharding = "{devices=[2,4]<=[8]}"}, %arg1: tensor<2048x2048xbf16> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}, %arg2: tensor<2048x1024xbf16> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<1024x1024xbf16> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<1024x2048xbf16>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<1024x2048xbf16>) -> tensor<1024x2048xbf16>
    %2 = stablehlo.dot_general %1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xbf16>, tensor<2048x1024xbf16>) -> tensor<1024x1024xbf16>
    return %2 : tensor<1024x1024xbf16>
  }
}
)mlir";

inline constexpr const char* kRingGspmd = R"mlir(module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<256x2048xbf16> {mhlo.sharding = "{devices=[2,4]<=[8]}"}) -> (tensor<128x2048xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<256x2048xbf16>) -> tensor<256x2048xbf16>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<256x2048xbf16>) -> tensor<128x512xbf16>
    %2 = call @shmap_body(%1) : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
    %3 = stablehlo.custom_call @Sharding(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<128x512xbf16>) -> tensor<128x2048xbf16>
    return %4 : tensor<128x2048xbf16>
  }
  func.func private @shmap_body(%arg0: tensor<128x512xbf16>) -> (tensor<128x512xbf16> {jax.result_info = "[None, ('model',)]"}) {
    %0 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
    %1 = "stablehlo.all_to_all"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, split_count = 4 : i64, split_dimension = 1 : i64}> : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
    %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<bf16>, %arg2: tensor<bf16>):
      %3 = stablehlo.add %arg1, %arg2 : tensor<bf16>
      stablehlo.return %3 : tensor<bf16>
    }) : (tensor<128x512xbf16>) -> tensor<128x512xbf16>
    return %2 : tensor<128x512xbf16>
  }
}
)mlir";

}  // namespace aoizora::shlo::testdata
