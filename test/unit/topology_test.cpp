#include "core/topology.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

using swy::Status;
using swy::core::Topology;

namespace {

// A page-aligned anonymous mapping, unmapped on scope exit.
class Mapping {
public:
    explicit Mapping(size_t len) : len_(len) {
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        addr_ = p == MAP_FAILED ? nullptr : p;
    }
    ~Mapping() {
        if (addr_ != nullptr) munmap(addr_, len_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    void* addr() const { return addr_; }
    size_t len() const { return len_; }

private:
    void* addr_ = nullptr;
    size_t len_;
};

}  // namespace

TEST(Topology, LoadSucceeds) {
    Topology topo;
    EXPECT_EQ(Topology::load(&topo), Status::kOk);
    EXPECT_EQ(Topology::load(nullptr), Status::kInvalidParam);
}

TEST(Topology, DescribeMentionsCoresAndCaches) {
    Topology topo;
    ASSERT_EQ(Topology::load(&topo), Status::kOk);
    std::string text = topo.describe();
    SCOPED_TRACE(text);
    EXPECT_NE(text.find("cores:"), std::string::npos);
    EXPECT_NE(text.find("PUs"), std::string::npos);
    EXPECT_NE(text.find("cache"), std::string::npos);
    EXPECT_NE(text.find("NUMA"), std::string::npos);
    EXPECT_NE(text.find("devices:"), std::string::npos);
#ifdef SWY_HAVE_HWLOC
    EXPECT_TRUE(topo.available());
    // At least one core and one PU: "cores: 0 physical" would mean discovery failed.
    EXPECT_EQ(text.find("cores: 0 physical"), std::string::npos);
    EXPECT_EQ(text.find(", 0 PUs"), std::string::npos);
    bool any_level = text.find("L1") != std::string::npos || text.find("L2") != std::string::npos ||
                     text.find("L3") != std::string::npos ||
                     text.find("none reported") != std::string::npos;  // some VMs hide caches
    EXPECT_TRUE(any_level);
#else
    EXPECT_FALSE(topo.available());
    EXPECT_NE(text.find("unknown"), std::string::npos);
#endif
}

TEST(Topology, CallerNumaNodeIsKnownOrMinusOne) {
    Topology topo;
    ASSERT_EQ(Topology::load(&topo), Status::kOk);
    int node = topo.numa_node_of_caller();
    EXPECT_GE(node, -1);
#ifdef SWY_HAVE_HWLOC
    EXPECT_GE(topo.numa_node_count(), 1);
#endif
}

TEST(Topology, BindPageAlignedBufferIsOkOrUnsupported) {
    Topology topo;
    ASSERT_EQ(Topology::load(&topo), Status::kOk);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    Mapping buf(16 * page);
    ASSERT_NE(buf.addr(), nullptr);

    int node = topo.numa_node_of_caller();
    if (node < 0) node = 0;
    Status st = topo.bind_to_numa_node(buf.addr(), buf.len(), node);
    EXPECT_TRUE(st == Status::kOk || st == Status::kUnsupported) << swy::status_text(st);
    // The memory stays usable whatever the answer.
    std::memset(buf.addr(), 0x5a, buf.len());
    EXPECT_EQ(static_cast<unsigned char*>(buf.addr())[buf.len() - 1], 0x5a);
}

TEST(Topology, BindRejectsBadArguments) {
    Topology topo;
    ASSERT_EQ(Topology::load(&topo), Status::kOk);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    Mapping buf(page);
    ASSERT_NE(buf.addr(), nullptr);
    EXPECT_EQ(topo.bind_to_numa_node(nullptr, page, 0), Status::kInvalidParam);
    EXPECT_EQ(topo.bind_to_numa_node(buf.addr(), 0, 0), Status::kInvalidParam);
    EXPECT_EQ(topo.bind_to_numa_node(buf.addr(), page, -1), Status::kInvalidParam);
#ifdef SWY_HAVE_HWLOC
    EXPECT_EQ(topo.bind_to_numa_node(buf.addr(), page, 1 << 20), Status::kInvalidParam);
#endif
}

TEST(Topology, UnloadedTopologyAnswersUnknown) {
    Topology topo;
    EXPECT_FALSE(topo.available());
    EXPECT_EQ(topo.numa_node_of_caller(), -1);
    EXPECT_EQ(topo.numa_node_count(), 0);
    int x = 0;
    EXPECT_EQ(topo.bind_to_numa_node(&x, sizeof(x), 0), Status::kUnsupported);
    EXPECT_FALSE(topo.describe().empty());
}

TEST(Topology, MoveTransfersOwnership) {
    Topology a;
    ASSERT_EQ(Topology::load(&a), Status::kOk);
    bool had = a.available();
    Topology b(std::move(a));
    EXPECT_EQ(b.available(), had);
    EXPECT_FALSE(a.available());  // NOLINT(bugprone-use-after-move): moved-from is empty
    Topology c;
    c = std::move(b);
    EXPECT_EQ(c.available(), had);
    EXPECT_EQ(Topology::load(&c), Status::kOk);  // reloading releases the old one
}
