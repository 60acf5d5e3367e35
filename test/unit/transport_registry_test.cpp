// The transport registry: every transport declares itself once (name, variables, address
// section, priority, reach), and the worker picks an endpoint's lane by walking the entries
// that reach the peer in priority order (self > shm > verbs > tcp).
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/address.h"
#include "core/endpoint.h"
#include "core/worker.h"
#include "test_context.h"
#include "transports/registry.h"

namespace swy::tl {
namespace {

std::vector<std::string> names_by_priority() {
    std::vector<const TransportEntry*> v(transports().begin(), transports().end());
    std::stable_sort(v.begin(), v.end(), [](const TransportEntry* a, const TransportEntry* b) {
        return a->priority > b->priority;
    });
    std::vector<std::string> names;
    for (const TransportEntry* t : v)
        names.emplace_back(t->name);
    return names;
}

TEST(TransportRegistry, ListsEachTransportOnceInOpeningOrder) {
    std::vector<std::string> names;
    for (const TransportEntry* t : transports())
        names.emplace_back(t->name);
    EXPECT_EQ(names, (std::vector<std::string>{"self", "shm", "tcp", "verbs"}));
    for (const std::string& n : names)
        EXPECT_NE(find_transport(n), nullptr) << n;
    EXPECT_EQ(find_transport("cma"), nullptr);  // a zero-copy helper, not an interface
    EXPECT_EQ(find_transport("nope"), nullptr);
}

TEST(TransportRegistry, LaneSelectionOrderIsSelfShmVerbsTcp) {
    EXPECT_EQ(names_by_priority(), (std::vector<std::string>{"self", "shm", "verbs", "tcp"}));
}

TEST(TransportRegistry, AddressSectionIdsAreUniqueAndNonZero) {
    std::set<uint8_t> ids;
    for (const TransportEntry* t : transports()) {
        EXPECT_NE(t->address_section, 0) << t->name;
        EXPECT_TRUE(ids.insert(t->address_section).second) << t->name;
    }
}

TEST(TransportRegistry, EveryEntryHasItsRequiredHooks) {
    for (const TransportEntry* t : transports()) {
        SCOPED_TRACE(std::string(t->name));
        EXPECT_NE(t->open, nullptr);
        EXPECT_NE(t->can_reach, nullptr);
        EXPECT_NE(t->connect, nullptr);
        EXPECT_FALSE(t->config_prefix.empty());
    }
}

TEST(TransportRegistry, VariablesCarryTheTransportPrefixAndAreInTheTable) {
    for (const TransportEntry* t : transports()) {
        for (const common::ConfigVar& var : t->config_vars) {
            SCOPED_TRACE(std::string(var.name));
            EXPECT_TRUE(var.name.starts_with(t->config_prefix));
            const common::ConfigVar* declared = common::find_config_var(var.name);
            ASSERT_NE(declared, nullptr);
            EXPECT_EQ(declared->type, var.type);
        }
    }
    EXPECT_NE(common::find_config_var("SHM_FIFO_CELLS"), nullptr);
    EXPECT_NE(common::find_config_var("SWY_TCP_KEEPALIVE"), nullptr);
    EXPECT_NE(common::find_config_var("VERBS_RCACHE_ENTRIES"), nullptr);
}

TEST(TransportRegistry, CanReachSelfOnlyItsWorkerShmOnlyItsHostNetworksAnyPeer) {
    const uint8_t section[1] = {0};
    ReachQuery own{.local_uid = 7,
                   .remote_uid = 7,
                   .same_host = true,
                   .section = section,
                   .section_length = 1};
    ReachQuery neighbour = own;
    neighbour.remote_uid = 8;
    ReachQuery remote = neighbour;
    remote.same_host = false;
    const TransportEntry& self = *find_transport("self");
    const TransportEntry& shm = *find_transport("shm");
    EXPECT_TRUE(self.can_reach(own));
    EXPECT_FALSE(self.can_reach(neighbour));
    EXPECT_TRUE(shm.can_reach(neighbour));
    EXPECT_FALSE(shm.can_reach(remote));
    for (const char* net : {"tcp", "verbs"}) {
        EXPECT_TRUE(find_transport(net)->can_reach(remote)) << net;
        EXPECT_TRUE(find_transport(net)->can_reach(neighbour)) << net;
    }
}

TEST(TransportRegistry, RdmaPortsAreClaimedByVerbsSoTcpMayIgnoreThem) {
    const TransportEntry& tcp = *find_transport("tcp");
    EXPECT_TRUE(device_claimed_by_other(tcp, "rxe0:1"));
    EXPECT_FALSE(device_claimed_by_other(tcp, "lo"));
    EXPECT_FALSE(device_claimed_by_other(*find_transport("verbs"), "rxe0:1"));
}

// ---- Lane selection in a worker -------------------------------------------------------------

class LaneSelection : public ::testing::Test {
protected:
    void open(const char* tls) {
        ctx_ = test::make_context({{"TLS", tls}, {"NET_DEVICES", "lo"}});
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &a_), SWY_OK);
        ASSERT_EQ(swy_worker_create(ctx_, nullptr, &b_), SWY_OK);
    }
    void TearDown() override {
        if (a_ != nullptr) swy_worker_destroy(a_);
        if (b_ != nullptr) swy_worker_destroy(b_);
        if (ctx_ != nullptr) swy_context_destroy(ctx_);
    }
    static core::Worker* w(swy_worker_h h) { return reinterpret_cast<core::Worker*>(h); }
    /// The transport of the lane an endpoint from A to @p address gets ("" on failure).
    std::string lane_to(const std::vector<uint8_t>& address) {
        swy_ep_params_t p{};
        p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.remote_address = address.data();
        p.remote_address_length = address.size();
        core::Endpoint* ep = nullptr;
        std::string why;
        if (w(a_)->create_endpoint(p, &ep, &why) != Status::kOk) return "";
        return ep->lane_attr().transport;
    }
    /// @p address as if its worker ran on another host.
    static std::vector<uint8_t> elsewhere(const std::vector<uint8_t>& address) {
        core::WorkerAddress wa;
        std::string why;
        EXPECT_EQ(core::decode_address(address.data(), address.size(), &wa, &why), Status::kOk);
        wa.host.boot_id[0] ^= 0xFF;
        return core::encode_address(wa);
    }
    swy_context_h ctx_ = nullptr;
    swy_worker_h a_ = nullptr;
    swy_worker_h b_ = nullptr;
};

TEST_F(LaneSelection, SelfThenShmThenTcpByReach) {
    open("self,shm,tcp");
    EXPECT_EQ(lane_to(w(a_)->address()), "self");
    EXPECT_EQ(lane_to(w(b_)->address()), "shm");
    EXPECT_EQ(lane_to(elsewhere(w(b_)->address())), "tcp");
}

TEST_F(LaneSelection, AddressHasOneSectionPerOpenTransportInRegistryOrder) {
    open("self,shm,tcp");
    core::WorkerAddress wa;
    std::string why;
    const std::vector<uint8_t> bytes = w(b_)->address();
    ASSERT_EQ(core::decode_address(bytes.data(), bytes.size(), &wa, &why), Status::kOk);
    std::vector<uint8_t> ids;
    for (const auto& s : wa.sections)
        ids.push_back(s.transport);
    EXPECT_EQ(ids, (std::vector<uint8_t>{find_transport("self")->address_section,
                                         find_transport("shm")->address_section,
                                         find_transport("tcp")->address_section}));
    EXPECT_NE(w(b_)->interface_named("tcp"), nullptr);
    EXPECT_EQ(w(b_)->interface_named("verbs"), nullptr);
}

TEST_F(LaneSelection, WithoutShmASameHostPeerGoesOverTcp) {
    open("self,tcp");
    EXPECT_EQ(lane_to(w(a_)->address()), "self");
    EXPECT_EQ(lane_to(w(b_)->address()), "tcp");
}

TEST_F(LaneSelection, NoTransportReachingThePeerIsUnreachable) {
    open("self,shm");
    swy_ep_params_t p{};
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    const std::vector<uint8_t> address = elsewhere(w(b_)->address());
    p.remote_address = address.data();
    p.remote_address_length = address.size();
    core::Endpoint* ep = nullptr;
    std::string why;
    EXPECT_EQ(w(a_)->create_endpoint(p, &ep, &why), Status::kUnreachable);
    EXPECT_NE(why.find("another host"), std::string::npos) << why;
}

}  // namespace
}  // namespace swy::tl
