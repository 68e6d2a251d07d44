// sha1_stream: the splittable random stream of the UTS distribution (rng/brg_sha1.c there),
// on OpenSSL's SHA-1.
//
// A node's state is a 20-byte SHA-1 digest. The root's is the digest of 16 zero bytes and the
// seed as 4 big-endian bytes (rng_init); child i's is the digest of its parent's 20 bytes and
// i as 4 big-endian bytes (rng_spawn); a node's random number is the last 4 bytes of its state,
// big-endian, masked to 31 bits (rng_rand). UTS computes SHA-1 with Brian Gladman's code; any
// correct SHA-1 gives the same digests, so the trees, and their published sizes, are the same.
#pragma once

#include <array>
#include <cstdint>

namespace schedlab {

using Sha1State = std::array<std::uint8_t, 20>;

// rng_init(seed).
Sha1State sha1_stream_root(std::int32_t seed);
// rng_spawn(parent, index).
Sha1State sha1_stream_child(const Sha1State& parent, std::int32_t index);
// rng_rand(state): 0 .. 2^31 - 1.
std::int32_t sha1_stream_rand(const Sha1State& state);

}  // namespace schedlab
