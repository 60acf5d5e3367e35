// Remote keys as a security boundary, over self and shm: out-of-range and wrong-access
// operations fail with SWY_ERR_INVALID_PARAM, stale (owner unmapped) and forged (secret
// changed) keys with SWY_ERR_ACCESS_DENIED, a key is refused on another endpoint, every
// malformed key string is refused or denied; the target's memory never changes. And
// swy_rkey_ptr.
#include <string>
#include <vector>

#include "rma_util.h"

namespace swy_itest {
namespace {

NodeOptions tls(const char* t) {
    NodeOptions o;
    o.config = {{"TLS", t}};
    return o;
}

/// Every byte of the target's region (and what follows it, for registered memory) still 0xEE.
void check_untouched(const Exposed& e, const char* what) {
    const size_t n = e.owned.empty() ? e.length : e.owned.size();
    const unsigned char* p = e.owned.empty() ? e.base : e.owned.data();
    for (size_t i = 0; i < n; ++i) {
        ICHECK_MSG(p[i] == 0xEE, "%s: target byte %zu changed to 0x%02x", what, i, p[i]);
    }
}

/// Rank 1 (or the single rank over self) owns the memory; rank 0 attacks it.
void bad_keys(World& w, const NodeOptions& opts, bool allocated) {
    const bool self = w.size() == 1;
    Node n(w, opts);
    n.connect_all(self);
    const int owner = self ? 0 : 1;
    const bool attacker = w.rank() == 0;
    swy_worker_h wk = n.worker();
    Exposed ro, rw;
    if (w.rank() == owner) {
        // Key 0: read-only; key 1: full access (unmapped later: stale).
        ro = expose(n.context(), allocated, 4000, SWY_ACCESS_REMOTE_READ);
        rw = expose(n.context(), allocated, 4000);
        for (Exposed* e : {&ro, &rw}) {
            std::memset(e->owned.empty() ? e->base : e->owned.data(), 0xEE,
                        e->owned.empty() ? e->length : e->owned.size());
        }
        publish_key(w, 0, n.context(), ro);
        publish_key(w, 1, n.context(), rw);
    }
    // The owner's side: nothing reached its memory, then it unmaps the full-access mapping
    // (its key becomes stale); at the end, still nothing changed.
    auto owner_unmap = [&] {
        check_untouched(ro, "read-only key");
        check_untouched(rw, "full key, before unmap");
        ICHECK_OK(swy_mem_unmap(n.context(), rw.mem));
        rw.mem = nullptr;
    };
    auto owner_end = [&] {
        if (!allocated) check_untouched(rw, "full key, after unmap");
        check_untouched(ro, "read-only key, at the end");
        ICHECK_OK(swy_mem_unmap(n.context(), ro.mem));
    };
    if (attacker) {
        swy_ep_h ep = n.ep(owner);
        if (!allocated && !self && n.query(owner).cma == 0) {
            fprintf(stderr,
                    "[rma] no CMA here: registered memory is reached by the message "
                    "path only; key checks of the direct path not tested\n");
        }
        const std::vector<unsigned char> ro_bytes = key_bytes(w, 0, owner);
        const std::vector<unsigned char> rw_bytes = key_bytes(w, 1, owner);
        const uint64_t ro_base = remote_base(w, 0, owner), rw_base = remote_base(w, 1, owner);
        swy_rkey_h kro = unpack(ep, ro_bytes), krw = unpack(ep, rw_bytes);
        unsigned char data[64] = {1, 2, 3, 4, 5, 6, 7, 8};
        uint64_t one = 1, old = 0;
        swy_request_h req = nullptr;

        // Out of range and without the right: refused at the initiator.
        ICHECK_STATUS(put(wk, ep, data, 8, rw_base + 3996, krw), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(put(wk, ep, data, 1, rw_base - 1, krw), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(get(wk, ep, data, 1, rw_base + 4000, krw), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(atomic(wk, ep, SWY_ATOMIC_OP_ADD, 8, 1, 0, nullptr, rw_base + 4000, krw),
                      SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(put(wk, ep, data, 8, ro_base, kro), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(atomic(wk, ep, SWY_ATOMIC_OP_ADD, 8, 1, 0, &old, ro_base, kro),
                      SWY_ERR_INVALID_PARAM);
        // Registered memory without CMA goes to the message path (not this test's subject).
        const bool direct = allocated || self || n.query(owner).cma != 0;
        if (direct) {
            ICHECK_OK(get(wk, ep, data, 8, ro_base, kro));  // reading is granted
            ICHECK(data[0] == 0xEE && data[7] == 0xEE);
        }
        // Bad atomic arguments.
        ICHECK_STATUS(swy_atomic_nb(ep, SWY_ATOMIC_OP_ADD, 2, &one, nullptr, nullptr, rw_base, krw,
                                    nullptr, &req),
                      SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(swy_atomic_nb(ep, SWY_ATOMIC_OP_ADD, 8, &one, nullptr, nullptr, rw_base + 4,
                                    krw, nullptr, &req),
                      SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(swy_atomic_nb(ep, SWY_ATOMIC_OP_CSWAP, 8, &one, nullptr, &old, rw_base, krw,
                                    nullptr, &req),
                      SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(swy_atomic_nb(ep, static_cast<swy_atomic_op_t>(6), 8, &one, nullptr, nullptr,
                                    rw_base, krw, nullptr, &req),
                      SWY_ERR_INVALID_PARAM);
        swy_request_params_t bad{};
        bad.field_mask = uint64_t{1} << 40;
        ICHECK_STATUS(swy_put_nb(ep, data, 8, rw_base, krw, &bad, &req), SWY_ERR_INVALID_PARAM);
        ICHECK_STATUS(swy_put_nb(ep, data, 8, rw_base, nullptr, nullptr, &req),
                      SWY_ERR_INVALID_PARAM);

        // Forged: the secret changed. Unpacks (it is well formed), then denied.
        std::vector<unsigned char> forged = rw_bytes;
        forged[24] ^= 0x40;
        swy_rkey_h kf = unpack(ep, forged);
        if (direct) {
            ICHECK_STATUS(put(wk, ep, data, 8, rw_base, kf), SWY_ERR_ACCESS_DENIED);
            ICHECK_STATUS(get(wk, ep, data, 8, rw_base, kf), SWY_ERR_ACCESS_DENIED);
            ICHECK_STATUS(atomic(wk, ep, SWY_ATOMIC_OP_SWAP, 8, 7, 0, &old, rw_base, kf),
                          SWY_ERR_ACCESS_DENIED);
            void* p = nullptr;
            ICHECK_STATUS(swy_rkey_ptr(kf, rw_base, &p),
                          allocated || self ? SWY_ERR_ACCESS_DENIED : SWY_ERR_UNREACHABLE);
        }
        swy_rkey_destroy(kf);

        // Every single byte of the key changed: refused by the unpacker, or refused/denied by
        // the operation, and never a write outside the range.
        for (size_t i = 0; i < rw_bytes.size() && direct; ++i) {
            std::vector<unsigned char> b = rw_bytes;
            b[i] ^= static_cast<unsigned char>(0x01u << (i % 8));
            swy_rkey_h kb = nullptr;
            swy_status_t st = swy_ep_rkey_unpack(ep, b.data(), b.size(), &kb);
            if (st == SWY_ERR_MALFORMED) continue;
            ICHECK_MSG(st == SWY_OK, "unpack of key with byte %zu changed: %d", i, (int)st);
            // Just past the real range: the owner never granted it.
            st = put(wk, ep, data, 8, rw_base + 4000, kb);
            ICHECK_MSG(st == SWY_ERR_INVALID_PARAM || st == SWY_ERR_ACCESS_DENIED ||
                           st == SWY_ERR_UNSUPPORTED,
                       "put with byte %zu of the key changed: %d (%s)", i, (int)st,
                       swy_status_string(st));
            swy_rkey_destroy(kb);
        }
        // Truncated and extended strings.
        for (size_t len = 0; len < rw_bytes.size(); ++len) {
            swy_rkey_h kb = nullptr;
            ICHECK_STATUS(swy_ep_rkey_unpack(ep, rw_bytes.data(), len, &kb), SWY_ERR_MALFORMED);
        }
        std::vector<unsigned char> longer = rw_bytes;
        longer.push_back(0);
        swy_rkey_h kl = nullptr;
        ICHECK_STATUS(swy_ep_rkey_unpack(ep, longer.data(), longer.size(), &kl), SWY_ERR_MALFORMED);

        // swy_rkey_ptr: mapped memory only.
        void* p = nullptr;
        ICHECK_STATUS(swy_rkey_ptr(krw, rw_base + 4000 + 1, &p), SWY_ERR_INVALID_PARAM);
        if (allocated || self) {
            ICHECK_OK(swy_rkey_ptr(krw, rw_base + 100, &p));
            ICHECK(static_cast<unsigned char*>(p)[0] == 0xEE);
        } else {
            ICHECK_STATUS(swy_rkey_ptr(krw, rw_base + 100, &p), SWY_ERR_UNREACHABLE);
        }
        if (self) {
            owner_unmap();
        } else {
            w.scratch(0).store(1, std::memory_order_release);  // owner: check, then unmap
            w.wait_scratch_at_least(1, 1, wk);
        }
        // Stale: the owner unmapped (registered memory is still there; allocated is gone).
        if (direct) {
            ICHECK_STATUS(put(wk, ep, data, 8, rw_base, krw), SWY_ERR_ACCESS_DENIED);
            ICHECK_STATUS(get(wk, ep, data, 8, rw_base, krw), SWY_ERR_ACCESS_DENIED);
            ICHECK_STATUS(atomic(wk, ep, SWY_ATOMIC_OP_ADD, 8, 1, 0, nullptr, rw_base, krw),
                          SWY_ERR_ACCESS_DENIED);
            ICHECK_STATUS(swy_rkey_ptr(krw, rw_base, &p),
                          allocated || self ? SWY_ERR_ACCESS_DENIED : SWY_ERR_UNREACHABLE);
        }
        swy_rkey_destroy(kro);
        swy_rkey_destroy(krw);
        if (self) {
            owner_end();
        } else {
            w.scratch(2).store(1, std::memory_order_release);
        }
    }
    if (w.rank() == owner && !self) {
        w.wait_scratch_at_least(0, 1, wk);
        owner_unmap();
        w.scratch(1).store(1, std::memory_order_release);
        w.wait_scratch_at_least(2, 1, wk);
        owner_end();
    }
    n.finish();
}

TEST(RmaKeys, SelfAllocated) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { bad_keys(w, tls("self"), true); }));
}
TEST(RmaKeys, SelfRegistered) {
    EXPECT_TRUE(run_ranks(1, [](World& w) { bad_keys(w, tls("self"), false); }));
}
TEST(RmaKeys, ShmAllocated) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { bad_keys(w, tls("shm,cma"), true); }));
}
TEST(RmaKeys, ShmRegistered) {
    EXPECT_TRUE(run_ranks(2, [](World& w) { bad_keys(w, tls("shm,cma"), false); }));
}

TEST(RmaKeys, KeyIsRefusedOnAnotherEndpoint) {
    EXPECT_TRUE(run_ranks(3, [](World& w) {
        Node n(w, tls("shm,cma"));
        n.connect_all();
        swy_worker_h wk = n.worker();
        Exposed e;
        if (w.rank() == 1) {
            e = expose(n.context(), true, 4096);
            publish_key(w, 0, n.context(), e);
        }
        if (w.rank() == 0) {
            swy_rkey_h k = unpack(n.ep(1), key_bytes(w, 0, 1));
            const uint64_t base = remote_base(w, 0, 1);
            uint64_t v = 5;
            swy_request_h req = nullptr;
            ICHECK_STATUS(swy_put_nb(n.ep(2), &v, 8, base, k, nullptr, &req),
                          SWY_ERR_INVALID_PARAM);
            ICHECK_STATUS(swy_get_nb(n.ep(2), &v, 8, base, k, nullptr, &req),
                          SWY_ERR_INVALID_PARAM);
            ICHECK_STATUS(swy_atomic_nb(n.ep(2), SWY_ATOMIC_OP_ADD, 8, &v, nullptr, nullptr, base,
                                        k, nullptr, &req),
                          SWY_ERR_INVALID_PARAM);
            ICHECK_OK(put(wk, n.ep(1), &v, 8, base, k));  // its own endpoint works
            swy_rkey_destroy(k);
        }
        w.barrier(wk);
        if (w.rank() == 1) {
            uint64_t got = 0;
            std::memcpy(&got, e.base, 8);
            ICHECK(got == 5);
            ICHECK_OK(swy_mem_unmap(n.context(), e.mem));
        }
        n.finish();
    }));
}

TEST(RmaKeys, RkeyPtrReachesTheOwnersMemoryAndNoImmCompleteGivesARequest) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w, tls("shm,cma"));
        n.connect_all();
        swy_worker_h wk = n.worker();
        Exposed e;
        if (w.rank() == 1) {
            e = expose(n.context(), true, 8192);
            publish_key(w, 0, n.context(), e);
        }
        if (w.rank() == 0) {
            swy_rkey_h k = unpack(n.ep(1), key_bytes(w, 0, 1));
            const uint64_t base = remote_base(w, 0, 1);
            void* p = nullptr;
            ICHECK_OK(swy_rkey_ptr(k, base + 4096, &p));
            std::memcpy(p, "through the pointer", 20);
            // NO_IMM_COMPLETE: a request, and its callback runs from progress.
            static int called = 0;
            swy_request_params_t rp{};
            rp.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK;
            rp.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE;
            rp.send_cb = [](swy_request_h, swy_status_t st, void*) { called += st == SWY_OK; };
            swy_request_h req = nullptr;
            ICHECK_STATUS(swy_put_nb(n.ep(1), "put", 4, base, k, &rp, &req), SWY_INPROGRESS);
            ICHECK(req != nullptr && called == 0);
            ICHECK_OK(wait_request(wk, req, "NO_IMM put"));
            swy_request_free(req);
            ICHECK(called == 1);
            swy_rkey_destroy(k);
        }
        w.barrier(wk);
        if (w.rank() == 1) {
            ICHECK(std::memcmp(e.base + 4096, "through the pointer", 20) == 0);
            ICHECK(std::memcmp(e.base, "put", 4) == 0);
            ICHECK_OK(swy_mem_unmap(n.context(), e.mem));
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest
