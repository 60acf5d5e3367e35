#include "transports/verbs/verbs_device.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include "transports/verbs/device_select.h"

namespace swy::tl::verbs {
namespace {

const char* port_state_text(ibv_port_state s) {
    switch (s) {
        case IBV_PORT_ACTIVE: return "ACTIVE";
        case IBV_PORT_DOWN: return "DOWN";
        case IBV_PORT_INIT: return "INIT";
        case IBV_PORT_ARMED: return "ARMED";
        case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
        default: return "NOP";
    }
}

const char* gid_type_text(GidType t) {
    switch (t) {
        case GidType::kRoceV2: return "RoCE v2";
        case GidType::kRoceV1: return "RoCE v1";
        default: return "IB";
    }
}

struct DeviceList {
    ibv_device** list = nullptr;
    int count = 0;
    DeviceList() { list = ibv_get_device_list(&count); }
    ~DeviceList() {
        if (list != nullptr) ibv_free_device_list(list);
    }
};

/// Read the port's GID table (valid entries only) and pick one.
bool pick_gid(ibv_context* ctx, uint8_t port, const ibv_port_attr& pa, int forced,
              DeviceHandle* out, PortInfo* info) {
    std::vector<GidEntry> gids;
    const int len = pa.gid_tbl_len > 0 ? pa.gid_tbl_len : 1;
    std::vector<ibv_gid_entry> table(static_cast<size_t>(len));
    ssize_t n = ibv_query_gid_table(ctx, table.data(), table.size(), 0);
    if (n > 0) {
        for (ssize_t i = 0; i < n; ++i) {
            if (table[i].port_num != port) continue;
            GidEntry e;
            e.index = table[i].gid_index;
            e.type = table[i].gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::kRoceV2
                     : table[i].gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::kRoceV1
                                                                 : GidType::kIb;
            std::memcpy(e.raw.data(), table[i].gid.raw, 16);
            gids.push_back(e);
        }
    } else {
        // Older kernels: GID 0 through the plain query.
        ibv_gid g{};
        if (ibv_query_gid(ctx, port, 0, &g) == 0) {
            GidEntry e;
            std::memcpy(e.raw.data(), g.raw, 16);
            gids.push_back(e);
        }
    }
    const int at = choose_gid(gids, forced);
    if (at < 0) return false;
    out->gid_index = static_cast<int>(gids[at].index);
    out->gid = gids[at].raw;
    info->gid_index = out->gid_index;
    info->gid = gid_text(gids[at].raw);
    info->gid_type = gid_type_text(gids[at].type);
    return true;
}

}  // namespace

DeviceHandle::~DeviceHandle() {
    if (context != nullptr) ibv_close_device(context);
}

int mtu_bytes(ibv_mtu mtu) {
    switch (mtu) {
        case IBV_MTU_256: return 256;
        case IBV_MTU_512: return 512;
        case IBV_MTU_1024: return 1024;
        case IBV_MTU_2048: return 2048;
        case IBV_MTU_4096: return 4096;
        default: return 0;
    }
}

Status open_device(const VerbsConfig& config, DeviceHandle* out, PortInfo* info, std::string* why) {
    DeviceList devices;
    if (devices.list == nullptr || devices.count == 0) {
        *why = devices.list == nullptr ? std::string("ibv_get_device_list: ") + std::strerror(errno)
                                       : "no RDMA device";
        return Status::kNotFound;
    }
    const std::vector<DeviceSpec> specs = parse_device_specs(config.devices);
    std::string seen;
    for (int d = 0; d < devices.count; ++d) {
        const std::string name = ibv_get_device_name(devices.list[d]);
        if (!device_selected(specs, name, 0) && !device_selected(specs, name, 1) &&
            !device_selected(specs, name, 2)) {
            seen += (seen.empty() ? "" : ", ") + name + " (not in SWY_NET_DEVICES)";
            continue;
        }
        ibv_context* ctx = ibv_open_device(devices.list[d]);
        if (ctx == nullptr) {
            seen += (seen.empty() ? "" : ", ") + name + " (open: " + std::strerror(errno) + ")";
            continue;
        }
        ibv_device_attr da{};
        if (ibv_query_device(ctx, &da) != 0) {
            seen += (seen.empty() ? "" : ", ") + name + " (query failed)";
            ibv_close_device(ctx);
            continue;
        }
        for (uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
            if (!device_selected(specs, name, p)) continue;
            ibv_port_attr pa{};
            if (ibv_query_port(ctx, p, &pa) != 0) continue;
            const std::string where = name + ":" + std::to_string(p);
            if (pa.state != IBV_PORT_ACTIVE) {
                seen += (seen.empty() ? "" : ", ") + where + " (" + port_state_text(pa.state) + ")";
                continue;
            }
            PortInfo pi;
            pi.device = name;
            pi.port = p;
            pi.state = port_state_text(pa.state);
            pi.active_mtu = mtu_bytes(pa.active_mtu);
            pi.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
            pi.lid = pa.lid;
            if (!pick_gid(ctx, p, pa, config.gid_index, out, &pi)) {
                if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || config.gid_index >= 0) {
                    seen += (seen.empty() ? "" : ", ") + where + " (no usable GID)";
                    continue;
                }
                pi.gid_index = -1;  // InfiniBand routed by LID only
            }
            out->context = ctx;
            out->port = p;
            out->port_attr = pa;
            out->device_attr = da;
            out->is_global = pa.link_layer == IBV_LINK_LAYER_ETHERNET || pi.gid_index >= 0;
            pi.usable = true;
            *info = pi;
            return Status::kOk;
        }
        ibv_close_device(ctx);
    }
    *why = "no ACTIVE port selected by SWY_NET_DEVICES: " + (seen.empty() ? "none" : seen);
    return Status::kNotFound;
}

void probe_capabilities(ibv_context* context, ibv_pd* pd, uint32_t want_inline, PortInfo* info) {
    // Inline limit: the device only says by accepting or refusing a QP, so try halving sizes.
    if (ibv_cq* cq = ibv_create_cq(context, 4, nullptr, nullptr, 0)) {
        for (uint32_t size = want_inline;; size /= 2) {
            ibv_qp_init_attr qa{};
            qa.send_cq = cq;
            qa.recv_cq = cq;
            qa.qp_type = IBV_QPT_RC;
            qa.cap.max_send_wr = 1;
            qa.cap.max_recv_wr = 1;
            qa.cap.max_send_sge = 2;
            qa.cap.max_recv_sge = 1;
            qa.cap.max_inline_data = size;
            if (ibv_qp* qp = ibv_create_qp(pd, &qa)) {
                info->max_inline = std::min(size, qa.cap.max_inline_data);
                ibv_destroy_qp(qp);
                break;
            }
            if (size == 0) break;
        }
        ibv_destroy_cq(cq);
    }
    // Device memory (a PIO window on the adapter): the extended query says how much exists.
    ibv_device_attr_ex ax{};
    size_t max_dm = 0;
    if (ibv_query_device_ex(context, nullptr, &ax) == 0) max_dm = ax.max_dm_size;
    info->max_dm_size = max_dm;
    ibv_alloc_dm_attr dm_attr{};
    dm_attr.length = 4096;
    errno = 0;
    if (ibv_dm* dm = max_dm != 0 ? ibv_alloc_dm(context, &dm_attr) : nullptr) {
        info->device_memory = true;
        ibv_free_dm(dm);
    } else {
        info->device_memory = false;
        const int err = max_dm == 0 ? EOPNOTSUPP : errno;
        info->device_memory_reason = std::string("no device memory (ibv_alloc_dm: ") +
                                     std::strerror(err != 0 ? err : EOPNOTSUPP) + ", max_dm_size " +
                                     std::to_string(max_dm) + ")";
    }
    // dma-buf registration: with fd -1, a device that supports it fails on the fd (EBADF or
    // EINVAL); one that does not, fails with EOPNOTSUPP before looking at the fd.
    errno = 0;
    ibv_mr* mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
    const int err = errno;
    if (mr != nullptr) {
        ibv_dereg_mr(mr);
        info->dmabuf_mr = true;
    } else if (err == EOPNOTSUPP || err == ENOSYS || err == EPROTONOSUPPORT) {
        info->dmabuf_mr = false;
        info->dmabuf_reason = std::string("ibv_reg_dmabuf_mr: ") + std::strerror(err);
    } else {
        info->dmabuf_mr = true;
        info->dmabuf_reason = std::string("probe with no fd failed on the fd (") +
                              std::strerror(err) + "): the device accepts dma-buf MRs";
    }
}

std::vector<PortInfo> probe(const VerbsConfig& config, std::string* why) {
    std::vector<PortInfo> out;
    DeviceList devices;
    if (devices.list == nullptr || devices.count == 0) {
        if (why != nullptr) *why = "no RDMA device";
        return out;
    }
    const std::vector<DeviceSpec> specs = parse_device_specs(config.devices);
    for (int d = 0; d < devices.count; ++d) {
        const std::string name = ibv_get_device_name(devices.list[d]);
        ibv_context* ctx = ibv_open_device(devices.list[d]);
        if (ctx == nullptr) {
            PortInfo pi;
            pi.device = name;
            pi.why_not = std::string("cannot open: ") + std::strerror(errno);
            out.push_back(pi);
            continue;
        }
        ibv_device_attr da{};
        ibv_pd* pd = ibv_alloc_pd(ctx);
        if (ibv_query_device(ctx, &da) == 0) {
            for (uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
                ibv_port_attr pa{};
                if (ibv_query_port(ctx, p, &pa) != 0) continue;
                PortInfo pi;
                pi.device = name;
                pi.port = p;
                pi.state = port_state_text(pa.state);
                pi.active_mtu = mtu_bytes(pa.active_mtu);
                pi.link_layer =
                    pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
                pi.lid = pa.lid;
                DeviceHandle scratch;  // context stays owned here
                const bool gid = pick_gid(ctx, p, pa, config.gid_index, &scratch, &pi);
                if (pd != nullptr) probe_capabilities(ctx, pd, config.max_inline, &pi);
                if (!device_selected(specs, name, p)) {
                    pi.why_not = "not selected by SWY_NET_DEVICES";
                } else if (pa.state != IBV_PORT_ACTIVE) {
                    pi.why_not = "port not ACTIVE";
                } else if (!gid && pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
                    pi.why_not = "no usable GID";
                } else {
                    pi.usable = true;
                }
                out.push_back(pi);
            }
        }
        if (pd != nullptr) ibv_dealloc_pd(pd);
        ibv_close_device(ctx);
    }
    return out;
}

}  // namespace swy::tl::verbs
