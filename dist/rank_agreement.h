// Every rank of a job must run the same command: ranks started with other flags (mpirun's
// MPMD form "-np 1 sixnd train ... : -np 1 sixnd train ... --zero 3", or a config file that
// differs between nodes) would otherwise train on silently (rank 0's settings recorded, others
// used) or wait forever in a collective the other ranks never enter.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "dist/comm.h"

namespace sixnd {

// FNV-1a of s, cut to 52 bits so that a double carries it exactly through all_gather_host.
double text_hash52(const std::string& s);

// Compares (name, value) settings across the ranks of comm, in one all-gather of hashes; throws
// AgreedError("mpirun", ...) on every rank, naming the ranks and settings that differ from rank
// 0's, when any does. A collective: every rank calls it with the same names.
void check_ranks_agree(Comm& comm, const std::vector<std::pair<std::string, std::string>>& settings);

}  // namespace sixnd
