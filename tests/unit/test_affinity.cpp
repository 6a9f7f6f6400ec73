// Helper placement under helper_core = auto (src/engine/affinity.*).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/affinity.hpp"

namespace {

using mlbs::engine::auto_helper_cores;

// Helpers take the cores after the application's threads, last first.
TEST(Affinity, HelpersTakeTheFreeCoresLastFirst) {
  EXPECT_EQ(auto_helper_cores({0, 1, 2, 3}, 2, 2), (std::vector<int>{3, 2}));
  EXPECT_EQ(auto_helper_cores({0, 1, 2, 3}, 3, 1), (std::vector<int>{3}));
}

// More helpers than free cores: they cycle over the free ones.
TEST(Affinity, MoreHelpersThanFreeCoresShare) {
  EXPECT_EQ(auto_helper_cores({0, 1, 2, 3}, 2, 3), (std::vector<int>{3, 2, 3}));
}

// No free core (the application uses them all, or more): the helpers are left to the OS, not pinned.
TEST(Affinity, NoFreeCoreLeavesTheHelpersUnpinned) {
  EXPECT_EQ(auto_helper_cores({0, 1}, 2, 2), (std::vector<int>{-1, -1}));
  EXPECT_EQ(auto_helper_cores({4, 9}, 8, 1), (std::vector<int>{-1}));
}

// The allowed set is honoured (a cpuset from the batch system): only its cores are used.
TEST(Affinity, OnlyAllowedCores) {
  EXPECT_EQ(auto_helper_cores({2, 5, 7}, 1, 2), (std::vector<int>{7, 5}));
}

// Nothing known about the cores: not pinned.
TEST(Affinity, UnknownCoresAreNotPinned) {
  EXPECT_EQ(auto_helper_cores({}, 2, 2), (std::vector<int>{-1, -1}));
}

// The process's allowed cores are listed ascending and include the one we run on.
TEST(Affinity, AllowedCoresOfThisProcess) {
  const auto cores = mlbs::engine::allowed_cores();
  ASSERT_FALSE(cores.empty());
  EXPECT_TRUE(std::is_sorted(cores.begin(), cores.end()));
  EXPECT_NE(std::find(cores.begin(), cores.end(), sched_getcpu()), cores.end());
}

}  // namespace
