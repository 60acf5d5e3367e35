// The protocol descriptors (protocols/protocol.h): what each ProtoId is, read from the table
// and never from the enum's order.
#include <gtest/gtest.h>

#include <string>

#include "protocols/protocol.h"
#include "protocols/rndv/rendezvous.h"

namespace swy::proto {
namespace {

TEST(ProtoInfo, NamesAreTheSwyProtoValuesAndRoundTrip) {
    const char* expected[] = {"eager_short",   "eager_bcopy",    "rndv_get_cma",  "rndv_put_cma",
                              "rndv_pipeline", "rndv_get_zcopy", "rndv_put_zcopy"};
    for (const char* name : expected) {
        ProtoId id{};
        ASSERT_TRUE(proto_from_name(name, &id)) << name;
        EXPECT_EQ(std::string(proto_name(id)), name);
        EXPECT_EQ(proto_info(id).id, id);
    }
    ProtoId id{};
    EXPECT_FALSE(proto_from_name("rndv_get", &id));
}

TEST(ProtoInfo, FamiliesAndZeroCopyNeeds) {
    EXPECT_FALSE(is_rendezvous(ProtoId::kEagerShort));
    EXPECT_FALSE(is_rendezvous(ProtoId::kEagerBcopy));
    for (ProtoId id : {ProtoId::kRndvGetCma, ProtoId::kRndvPutCma, ProtoId::kRndvPipeline,
                       ProtoId::kRndvGetZcopy, ProtoId::kRndvPutZcopy}) {
        EXPECT_TRUE(is_rendezvous(id)) << proto_name(id);
        EXPECT_EQ(rndv::protocol(id).start != nullptr, true);
    }
    // GET and PUT are one protocol each over any zero-copy lane: CMA and RDMA differ only in
    // whether the lane hands out keys.
    EXPECT_EQ(proto_info(ProtoId::kRndvGetCma).zcopy, ZcopyNeed::kGet);
    EXPECT_EQ(proto_info(ProtoId::kRndvGetZcopy).zcopy, ZcopyNeed::kGet);
    EXPECT_EQ(proto_info(ProtoId::kRndvPutCma).zcopy, ZcopyNeed::kPut);
    EXPECT_EQ(proto_info(ProtoId::kRndvPutZcopy).zcopy, ZcopyNeed::kPut);
    EXPECT_EQ(proto_info(ProtoId::kRndvPipeline).zcopy, ZcopyNeed::kNone);
    EXPECT_FALSE(proto_info(ProtoId::kRndvGetCma).remote_keys);
    EXPECT_TRUE(proto_info(ProtoId::kRndvGetZcopy).remote_keys);
    EXPECT_EQ(rndv::protocol(ProtoId::kRndvGetCma).progress,
              rndv::protocol(ProtoId::kRndvGetZcopy).progress);
    EXPECT_EQ(rndv::protocol(ProtoId::kRndvPutCma).progress,
              rndv::protocol(ProtoId::kRndvPutZcopy).progress);
}

}  // namespace
}  // namespace swy::proto
