// Argon2id (the reference implementation, Debian's libargon2) for console passwords.
#include <argon2.h>

#include <malloc.h>

// Argon2's memory comes from malloc; a fixed mmap threshold keeps such large blocks mmapped, so
// they go back to the system when freed (glibc's dynamic threshold would otherwise rise past
// them after the first free and keep every later block in a thread's arena). See Passwords.swift.
static inline void cargon2_map_large_blocks(void) { mallopt(M_MMAP_THRESHOLD, 4 << 20); }
