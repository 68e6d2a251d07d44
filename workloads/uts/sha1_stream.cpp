// sha1_stream: UTS's random stream on OpenSSL's EVP digest interface (sha1_stream.hpp).
//
// Cost. A UTS node costs one digest per child, and the digest is most of a node's work, so the
// per-digest overhead of the library matters: OpenSSL 3 looks an algorithm up by name on every
// implicit fetch (EVP_sha1() inside EVP_Digest) and EVP_Digest allocates a context per call.
// So the algorithm is fetched once per process (EVP_MD_fetch) and each thread keeps one digest
// context and reinitialises it per digest (EVP_DigestInit_ex2 resets it without freeing).
//
// Threads and fibers. A task may resume on another thread after a switch, and the compiler may
// keep a thread_local's address across one (docs/platform.md). A digest contains no switch: the
// context is looked up inside digest(), which is kept out of line, and used only until it
// returns, so the context used is always the running thread's own.
#include "sha1_stream.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <stdexcept>

namespace schedlab {
namespace {

// The process's SHA-1 implementation from OpenSSL's default provider, fetched once.
const EVP_MD* sha1_algorithm() {
  static EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA1", nullptr);
    if (m == nullptr) throw std::runtime_error("OpenSSL has no SHA-1 (EVP_MD_fetch failed); UTS cannot run");
    return m;
  }();
  return md;
}

// One reusable digest context per thread, freed when the thread ends.
struct ThreadContext {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~ThreadContext() { EVP_MD_CTX_free(ctx); }
};

// SHA-1 of a || b. Out of line so that the thread_local is read afresh by the thread that runs
// it (the file's comment). Throws if OpenSSL fails, which only a broken library would.
[[gnu::noinline]] Sha1State digest(const std::uint8_t* a, std::size_t a_len, const std::uint8_t* b,
                                   std::size_t b_len) {
  static thread_local ThreadContext local;
  Sha1State out;
  unsigned int len = 0;
  if (local.ctx == nullptr || EVP_DigestInit_ex2(local.ctx, sha1_algorithm(), nullptr) != 1 ||
      EVP_DigestUpdate(local.ctx, a, a_len) != 1 || EVP_DigestUpdate(local.ctx, b, b_len) != 1 ||
      EVP_DigestFinal_ex(local.ctx, out.data(), &len) != 1 || len != out.size()) {
    throw std::runtime_error("OpenSSL's SHA-1 digest failed");
  }
  return out;
}

std::array<std::uint8_t, 4> big_endian(std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  return {static_cast<std::uint8_t>(u >> 24), static_cast<std::uint8_t>(u >> 16), static_cast<std::uint8_t>(u >> 8),
          static_cast<std::uint8_t>(u)};
}

}  // namespace

Sha1State sha1_stream_root(std::int32_t seed) {
  const std::array<std::uint8_t, 16> zeros{};
  const auto s = big_endian(seed);
  return digest(zeros.data(), zeros.size(), s.data(), s.size());
}

Sha1State sha1_stream_child(const Sha1State& parent, std::int32_t index) {
  const auto i = big_endian(index);
  return digest(parent.data(), parent.size(), i.data(), i.size());
}

std::int32_t sha1_stream_rand(const Sha1State& state) {
  const std::uint32_t b = (std::uint32_t{state[16]} << 24) | (std::uint32_t{state[17]} << 16) |
                          (std::uint32_t{state[18]} << 8) | std::uint32_t{state[19]};
  return static_cast<std::int32_t>(b & 0x7fffffffu);  // POS_MASK: 31 bits
}

}  // namespace schedlab
