// The verbs handshake and immediate encodings: a handshake that is not exactly right is
// refused with a reason, never used to build a QP.
#include <gtest/gtest.h>

#include "transports/verbs/verbs_wire.h"

using namespace swy::tl::verbs;

namespace {
CmMessage valid(CmType type) {
    CmMessage m{};
    m.magic = kCmMagic;
    m.version = kCmVersion;
    m.type = static_cast<uint8_t>(type);
    m.mtu = 3;
    m.is_global = 1;
    m.uid = 42;
    m.qpn = 0x11;
    m.psn = 0x123456;
    m.rx_credits = 64;
    m.max_message = 8192;
    return m;
}
}  // namespace

TEST(VerbsHandshake, AcceptsAValidRequest) {
    EXPECT_EQ(validate(valid(CmType::kRequest), CmType::kRequest), nullptr);
}

TEST(VerbsHandshake, RejectsEachBrokenField) {
    struct Case {
        const char* what;
        void (*breaks)(CmMessage*);
    };
    const Case cases[] = {
        {"magic", [](CmMessage* m) { m->magic ^= 1; }},
        {"version", [](CmMessage* m) { m->version = 9; }},
        {"type", [](CmMessage* m) { m->type = static_cast<uint8_t>(CmType::kReply); }},
        {"uid", [](CmMessage* m) { m->uid = 0; }},
        {"qpn zero", [](CmMessage* m) { m->qpn = 0; }},
        {"qpn 25 bits", [](CmMessage* m) { m->qpn = 0x1000000; }},
        {"psn 25 bits", [](CmMessage* m) { m->psn = 0x1000000; }},
        {"mtu", [](CmMessage* m) { m->mtu = 6; }},
        {"credits zero", [](CmMessage* m) { m->rx_credits = 0; }},
        {"credits too many", [](CmMessage* m) { m->rx_credits = 0x8000; }},
        {"buffer size", [](CmMessage* m) { m->max_message = 16; }},
        {"join qpn 25 bits", [](CmMessage* m) { m->join_qpn = 0x1000000, m->join_peer_qpn = 1; }},
        {"join without its peer", [](CmMessage* m) { m->join_qpn = 5; }},
    };
    for (const Case& c : cases) {
        CmMessage m = valid(CmType::kRequest);
        c.breaks(&m);
        EXPECT_NE(validate(m, CmType::kRequest), nullptr) << c.what;
    }
}

TEST(VerbsHandshake, AnAnswerIsAReplyOrARedirectWithoutJoinFields) {
    EXPECT_EQ(validate_answer(valid(CmType::kReply)), nullptr);
    EXPECT_EQ(validate_answer(valid(CmType::kRedirect)), nullptr);
    EXPECT_NE(validate_answer(valid(CmType::kRequest)), nullptr) << "a request is no answer";
    EXPECT_NE(validate_answer(valid(CmType::kBye)), nullptr);
    CmMessage joined = valid(CmType::kReply);
    joined.join_qpn = 5;
    joined.join_peer_qpn = 6;
    EXPECT_EQ(validate_answer(joined), nullptr) << "a reply agreeing to a join";
    CmMessage redirect = valid(CmType::kRedirect);
    redirect.join_qpn = 5;
    redirect.join_peer_qpn = 6;
    EXPECT_NE(validate_answer(redirect), nullptr) << "a redirect names its QP in qpn only";
    redirect = valid(CmType::kRedirect);
    redirect.qpn = 0;
    EXPECT_NE(validate_answer(redirect), nullptr) << "a redirect to no QP";
    redirect = valid(CmType::kRedirect);
    redirect.version = 3;
    EXPECT_NE(validate_answer(redirect), nullptr) << "a version-3 peer knows no redirect";
    EXPECT_NE(validate(valid(CmType::kRedirect), CmType::kRequest), nullptr)
        << "a redirect is no request";
}

TEST(VerbsImmediate, RoundTripsIdAndCredits) {
    const uint32_t imm = encode_imm(0xF2, 0xBEEF);
    EXPECT_EQ(imm_am_id(imm), 0xF2);
    EXPECT_EQ(imm_freed(imm), 0xBEEF);
    EXPECT_EQ(imm_am_id(encode_imm(1, 0xFFFF)), 1);
}

TEST(VerbsHandshake, CarriesANonceAndAProofAfterTheSignedFields) {
    // Version 4 (3 + the redirect answer): the proof covers every connection field (join
    // fields included) and nothing after them.
    EXPECT_EQ(kCmVersion, 4);
    EXPECT_EQ(sizeof(CmMessage), 120u);
    EXPECT_EQ(offsetof(CmMessage, nonce), kCmSignedBytes);
    EXPECT_EQ(offsetof(CmMessage, proof), kCmSignedBytes + 16);
    CmMessage old = valid(CmType::kRequest);
    old.version = 1;
    EXPECT_NE(validate(old, CmType::kRequest), nullptr) << "a version-1 handshake is refused";
}

TEST(VerbsCreditWord, CarriesTheFreedCountAndTheGrant) {
    const uint64_t w = encode_credit_word(0xFFFE, 64);
    EXPECT_EQ(credit_word_freed(w), 0xFFFE);
    EXPECT_EQ(credit_word_credits(w), 64);
    EXPECT_EQ(credit_word_credits(encode_credit_word(3, 0)), 0)
        << "an old-style word grants nothing";
}
