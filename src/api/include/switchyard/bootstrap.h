/**
 * @file switchyard/bootstrap.h
 * @brief Bootstrap through the launcher's PMIx server: rank, size, endpoints by rank, barrier.
 *
 * A program started by `mpirun`, `prterun` or Slurm's `srun --mpi=pmix` has a PMIx server
 * (the launcher's daemon) at hand. swy_bootstrap_pmix_init() publishes the worker's address
 * there (PMIx_Put + PMIx_Commit, no collective); swy_bootstrap_ep() fetches a peer's address
 * only when an endpoint to that rank is first needed (PMIx_Get on the peer: the server asks
 * the peer's daemon for it, "direct modex"), so start-up costs nothing per peer and a rank
 * that talks to two neighbours never learns the other N-2 addresses.
 *
 * Built when CMake finds PMIx (option SWY_WITH_PMIX=AUTO|ON|OFF). Without it every function
 * here exists and returns SWY_ERR_UNSUPPORTED, with a log line that says so.
 *
 * Thread safety: a bootstrap is used by one thread at a time (as a SWY_THREAD_MODE_SINGLE
 * worker is); calls on different bootstraps do not interfere. Ownership: the bootstrap keeps
 * its worker and the endpoints it creates; finalize it before destroying the worker.
 */
#ifndef SWITCHYARD_BOOTSTRAP_H
#define SWITCHYARD_BOOTSTRAP_H

#include <stdint.h>

#include <switchyard/switchyard.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swy_bootstrap* swy_bootstrap_h; /**< One worker's membership in a launched job. */

/**
 * @brief Join the job the launcher started this process in, and publish @p worker's address.
 *
 * Calls PMIx_Init (reference-counted by PMIx, so an MPI library in the same process is not
 * disturbed), reads this process's rank and the job size, and puts the worker address under
 * a Switchyard key with global scope. No fence: peers fetch it on demand.
 *
 * Per-job authentication key: rank 0 draws a random 32-byte key and puts it (hex, global
 * scope) before its address; every other rank fetches rank 0's key (waiting for rank 0 as
 * swy_bootstrap_ep() waits for an address, up to 120 s) and every rank installs it on
 * @p worker before publishing its own address. From then on the worker's tcp connections and
 * verbs handshakes are authenticated with it both ways (HMAC-SHA256, docs/security.md): a
 * process outside the job cannot deliver a message to the worker or connect to it, and it
 * replaces a key set with SWY_AUTH_KEY. Connections the worker had open before that were not
 * authenticated with the job key are closed. The key lives in the job's PMIx key-value store,
 * so it is as secret as that store (readable by the job's processes and the launcher).
 * @param worker     the worker whose address is published; must outlive the bootstrap.
 * @param[out] bootstrap  receives the handle; release with swy_bootstrap_finalize().
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument); SWY_ERR_UNREACHABLE (no PMIx server:
 *         the process was not started by a PMIx launcher); SWY_ERR_IO (the server refused
 *         the put or commit, or no random bytes for the key; the log has the reason);
 *         SWY_ERR_TIMED_OUT (rank 0 published no key within 120 s); SWY_ERR_MALFORMED (rank
 *         0's key is not a valid key); SWY_ERR_NO_MEMORY; SWY_ERR_UNSUPPORTED (built
 *         without PMIx).
 */
swy_status_t swy_bootstrap_pmix_init(swy_worker_h worker, swy_bootstrap_h* bootstrap);

/**
 * @brief This process's rank in the job (0 .. size-1).
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_rank(swy_bootstrap_h bootstrap, uint32_t* rank);

/**
 * @brief Number of processes in the job.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_size(swy_bootstrap_h bootstrap, uint32_t* size);

/**
 * @brief Endpoint from this worker to the worker of @p rank, created on first use.
 *
 * The first call for a rank fetches its address (waiting, with a timeout of 120 s, until
 * that rank has called swy_bootstrap_pmix_init(); the worker is progressed meanwhile) and
 * creates the endpoint; later calls return the same endpoint. @p rank may be this process's
 * own rank (an endpoint to itself). The endpoint belongs to the bootstrap: do not close it
 * with swy_ep_close_nb(); swy_bootstrap_close_endpoints() and swy_bootstrap_finalize() do.
 * @param ep_template  flags, err_cb and err_arg for a new endpoint (its remote_address fields
 *                     are ignored); may be NULL (all zero). Unused when the endpoint exists.
 * @param[out] ep     the endpoint.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, rank >= size); SWY_ERR_TIMED_OUT
 *         (the rank published no address within 120 s); SWY_ERR_IO (another PMIx failure,
 *         logged); any error of swy_ep_create(); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_ep(swy_bootstrap_h bootstrap, uint32_t rank,
                              const swy_ep_params_t* ep_template, swy_ep_h* ep);

/**
 * @brief Wait until every process of the job has entered the barrier.
 *
 * A PMIx fence without data collection (one message per daemon, nothing gathered). The
 * worker is progressed while waiting, so sends that completed locally but need their
 * sender's progress to land still land.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM; SWY_ERR_IO (the fence failed, e.g. a process of the
 *         job died; logged); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_barrier(swy_bootstrap_h bootstrap);

/**
 * @brief Close every endpoint the bootstrap created, progressing the worker until done.
 *
 * Call it after a barrier when peers may still be sending, as for swy_ep_close_nb(). A later
 * swy_bootstrap_ep() creates a fresh endpoint.
 * @return SWY_OK, or the first error a close reported (every endpoint is closed regardless);
 *         SWY_ERR_INVALID_PARAM (NULL or an unknown mode); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_close_endpoints(swy_bootstrap_h bootstrap, swy_ep_close_mode_t mode);

/**
 * @brief Close the remaining endpoints (flush), leave PMIx (PMIx_Finalize) and free the handle.
 *
 * Does not synchronise with the other processes: call swy_bootstrap_barrier() first when
 * peers may still be talking to this worker. The worker is not destroyed.
 * @return SWY_OK, or the first error of the closes or of PMIx_Finalize (the handle is freed
 *         in every case); SWY_ERR_INVALID_PARAM (NULL); SWY_ERR_UNSUPPORTED.
 */
swy_status_t swy_bootstrap_finalize(swy_bootstrap_h bootstrap);

#ifdef __cplusplus
}
#endif

#endif
