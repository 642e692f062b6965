// CUB's DeviceRadixSort::SortPairs on 32-bit keys with 32-bit values, the same pairs
// `murmur flock sort-bench` sorts, timed with CUDA events (mean of 10 runs after one warm-up).
//   nvcc -O3 -arch=sm_90 -o /tmp/cub_sort_pairs scripts/cub_sort_pairs.cu
//   /tmp/cub_sort_pairs 10000000,100000000
#include <cub/device/device_radix_sort.cuh>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                        \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__global__ void fill(unsigned n, unsigned* keys, unsigned* values) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned long long z = (i + 1ull) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    keys[i] = (unsigned)(z ^ (z >> 31));
    values[i] = i;
  }
}

int main(int argc, char** argv) {
  std::vector<unsigned> sizes;
  char* list = strdup(argc > 1 ? argv[1] : "10000000,100000000");
  for (char* t = std::strtok(list, ","); t; t = std::strtok(nullptr, ",")) sizes.push_back(std::atoi(t));
  std::printf("| pairs | CUB SortPairs u32 keys + u32 values, 32 bits, ms |\n|---|---|\n");
  for (unsigned n : sizes) {
    unsigned *k0, *k1, *v0, *v1;
    CHECK(cudaMalloc(&k0, n * 4ull));
    CHECK(cudaMalloc(&k1, n * 4ull));
    CHECK(cudaMalloc(&v0, n * 4ull));
    CHECK(cudaMalloc(&v1, n * 4ull));
    fill<<<(n + 255) / 256, 256>>>(n, k0, v0);
    size_t temp_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k0, k1, v0, v1, n));
    void* temp;
    CHECK(cudaMalloc(&temp, temp_bytes));
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k0, k1, v0, v1, n));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a));
    for (int r = 0; r < 10; ++r) CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k0, k1, v0, v1, n));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    std::printf("| %u | %.3f |\n", n, ms / 10);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(k0));
    CHECK(cudaFree(k1));
    CHECK(cudaFree(v0));
    CHECK(cudaFree(v1));
  }
  return 0;
}
