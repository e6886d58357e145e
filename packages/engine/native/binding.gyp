# The native kernels addon. Each ISA's kernels live in their own static library
# so they can be compiled with their own -m flags; the addon picks one at load
# time with __builtin_cpu_supports (src/addon.cc).
{
  "target_defaults": {
    "cflags_cc": ["-std=gnu++17", "-O3", "-fno-math-errno", "-fPIC", "-Wall", "-Wno-unused-function"],
    "cflags_cc!": ["-std=gnu++14", "-std=gnu++20"],
    "conditions": [["target_arch=='x64'", {"defines": ["SVC_X86"]}]]
  },
  "targets": [
    {
      "target_name": "svc_isa_baseline",
      "type": "static_library",
      "sources": ["src/isa_baseline.cc"]
    },
    {
      "target_name": "svc_kernels",
      "sources": ["src/addon.cc", "src/thread_pool.cc"],
      "dependencies": ["svc_isa_baseline"],
      "cflags_cc": ["-pthread"],
      "ldflags": ["-pthread"],
      "conditions": [
        ["target_arch=='x64'", {"dependencies": ["svc_isa_avx2", "svc_isa_avx512", "svc_isa_avx512vnni", "svc_isa_amx"]}]
      ]
    }
  ],
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "svc_isa_avx2",
          "type": "static_library",
          "sources": ["src/isa_avx2.cc"],
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c"]
        },
        {
          "target_name": "svc_isa_avx512",
          "type": "static_library",
          "sources": ["src/isa_avx512.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"]
        },
        {
          "target_name": "svc_isa_avx512vnni",
          "type": "static_library",
          "sources": ["src/isa_avx512vnni.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"]
        },
        {
          "target_name": "svc_isa_amx",
          "type": "static_library",
          "sources": ["src/isa_amx.cc"],
          "cflags_cc": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni", "-mavx2", "-mfma", "-mf16c", "-mprefer-vector-width=512"]
        }
      ]
    }]
  ]
}
