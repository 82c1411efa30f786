// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_lp: TCP-LP (Low Priority), ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_lp.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Paper: A. Kuzmanovic, E. W. Knightly, "TCP-LP: A Distributed Algorithm for Low Priority Data
 * Transfer", IEEE INFOCOM 2003.
 *
 * Rules as the module:
 *   - one-way delay from the TCP timestamps: OWD = TSval·(1000/remote HZ) − TSecr (relative,
 *     32-bit wrapping as in the module), the remote clock rate estimated from successive
 *     TSval/TSecr pairs (EWMA 1/64); min and max OWD tracked (the max "one below the max"),
 *     smoothed OWD (EWMA 1/8);
 *   - early congestion indication when the smoothed OWD exceeds min + 15 % of (max − min): cwnd
 *     is halved, or set to 1 when it happens again within the inference time (3 × the time since
 *     the echoed timestamp) after the last such drop; the min/max are then re-centred on the
 *     smoothed OWD;
 *   - Reno growth outside the inference time only; losses as Reno (ssthresh cwnd/2, Reno undo).
 *
 * Departures forced by BPF: the ms clock is tcp_mstamp/1000 (as tcp_time_stamp_ms() computes
 * it; the µs variant when the connection uses µs timestamps, as tcp_time_stamp_ts()); the
 * module's signed 64-bit temporaries hold values computed in 32-bit unsigned arithmetic, so the
 * port keeps them 32-bit unsigned except the remote-HZ EWMA, which stays signed 64-bit.
 *
 * Signals: EV_LOSS at every ssthresh call, EV_ROUND at each early congestion indication:
 * hscc-signals: snd_cwnd ssthresh flag owd_min owd_max sowd inference
 */
#include "hscc_cc.h"

#define LP_TS_HZ 1000 /* TCP_TS_HZ */
#define LP_RESOL LP_TS_HZ
#define LP_VALID_RHZ (1 << 0)
#define LP_VALID_OWD (1 << 1)
#define LP_WITHIN_THR (1 << 3)
#define LP_WITHIN_INF (1 << 4)

struct zlp {
	__u32 flag;
	__u32 sowd; /* smoothed OWD << 3 */
	__u32 owd_min;
	__u32 owd_max;
	__u32 owd_max_rsv;
	__u32 remote_hz;
	__u32 remote_ref_time;
	__u32 local_ref_time;
	__u32 last_drop;
	__u32 inference;
};
_Static_assert(sizeof(struct zlp) <= ICSK_CA_PRIV_BYTES, "lp state too large");

SEC("struct_ops")
void BPF_PROG(zlp_init, struct sock *sk)
{
	struct zlp *lp = inet_csk_ca(sk);

	__builtin_memset(lp, 0, sizeof(*lp));
	lp->owd_min = 0xffffffff;
	SIG(EV_INIT, "%u", LP_RESOL);
}

SEC("struct_ops")
void BPF_PROG(zlp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct zlp *lp = inet_csk_ca(sk);

	if (!(lp->flag & LP_WITHIN_INF))
		tcp_reno_cong_avoid(sk, ack, acked);
}

static __always_inline __u32 lp_remote_hz(struct sock *sk, struct zlp *lp)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 tsval = tp->rx_opt.rcv_tsval, tsecr = tp->rx_opt.rcv_tsecr;
	__s64 rhz = (__s64)(lp->remote_hz << 6), m = 0;

	if (lp->remote_ref_time == 0 || lp->local_ref_time == 0)
		goto out;
	if (tsval == lp->remote_ref_time || tsecr == lp->local_ref_time)
		goto out;
	m = (__u32)(LP_TS_HZ * (tsval - lp->remote_ref_time)) / (tsecr - lp->local_ref_time);
	if (rhz > 0) {
		m -= rhz >> 6; /* error of the estimate */
		rhz += m;      /* 63/64 old + 1/64 new */
	} else {
		rhz = m << 6;
	}
out:
	if ((rhz >> 6) > 0)
		lp->flag |= LP_VALID_RHZ;
	else
		lp->flag &= ~LP_VALID_RHZ;
	lp->remote_ref_time = tsval;
	lp->local_ref_time = tsecr;
	return (__u32)(rhz >> 6);
}

static __always_inline __u32 lp_owd(struct sock *sk, struct zlp *lp)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 owd = 0;

	lp->remote_hz = lp_remote_hz(sk, lp);
	if (lp->flag & LP_VALID_RHZ)
		owd = tp->rx_opt.rcv_tsval * (LP_RESOL / lp->remote_hz) - tp->rx_opt.rcv_tsecr * (LP_RESOL / LP_TS_HZ);
	if (owd > 0)
		lp->flag |= LP_VALID_OWD;
	else
		lp->flag &= ~LP_VALID_OWD;
	return owd;
}

static __always_inline void lp_rtt_sample(struct sock *sk, struct zlp *lp)
{
	__u32 mowd = lp_owd(sk, lp);

	if (!(lp->flag & LP_VALID_RHZ) || !(lp->flag & LP_VALID_OWD))
		return;
	if (mowd < lp->owd_min)
		lp->owd_min = mowd;
	if (mowd > lp->owd_max) { /* forget the largest: keep the one below it */
		if (mowd > lp->owd_max_rsv) {
			if (lp->owd_max_rsv == 0)
				lp->owd_max = mowd;
			else
				lp->owd_max = lp->owd_max_rsv;
			lp->owd_max_rsv = mowd;
		} else {
			lp->owd_max = mowd;
		}
	}
	if (lp->sowd != 0) {
		mowd -= lp->sowd >> 3;
		lp->sowd += mowd; /* 7/8 old + 1/8 new */
	} else {
		lp->sowd = mowd << 3;
	}
}

static __always_inline __u32 lp_now(struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, tcp_usec_ts))
		return (__u32)tp->tcp_mstamp;
	return (__u32)(tp->tcp_mstamp / 1000);
}

SEC("struct_ops")
void BPF_PROG(zlp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zlp *lp = inet_csk_ca(sk);
	__u32 now = lp_now(tp), delta;

	if (sample->rtt_us > 0)
		lp_rtt_sample(sk, lp);
	delta = now - tp->rx_opt.rcv_tsecr;
	if ((__s32)delta > 0)
		lp->inference = 3 * delta;
	if (lp->last_drop && (now - lp->last_drop < lp->inference))
		lp->flag |= LP_WITHIN_INF;
	else
		lp->flag &= ~LP_WITHIN_INF;
	if ((lp->sowd >> 3) < lp->owd_min + 15 * (lp->owd_max - lp->owd_min) / 100)
		lp->flag |= LP_WITHIN_THR;
	else
		lp->flag &= ~LP_WITHIN_THR;
	if (lp->flag & LP_WITHIN_THR)
		return;
	/* early congestion indication: re-centre min/max, then cut */
	lp->owd_min = lp->sowd >> 3;
	lp->owd_max = lp->sowd >> 2;
	lp->owd_max_rsv = lp->sowd >> 2;
	if (lp->flag & LP_WITHIN_INF)
		tp->snd_cwnd = 1U;
	else
		tp->snd_cwnd = max(tp->snd_cwnd >> 1U, 1U);
	lp->last_drop = now;
	SIG(EV_ROUND, "%u %u %u %u %u %u %u", tp->snd_cwnd, tp->snd_ssthresh, lp->flag, lp->owd_min, lp->owd_max,
	    lp->sowd >> 3, lp->inference);
}

SEC("struct_ops")
__u32 BPF_PROG(zlp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zlp *lp = inet_csk_ca(sk);
	__u32 ss = tcp_reno_ssthresh(sk);

	SIG(EV_LOSS, "%u %u %u %u %u %u %u", tp->snd_cwnd, ss, lp->flag, lp->owd_min, lp->owd_max, lp->sowd >> 3,
	    lp->inference);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(zlp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_lp = {
	.init = (void *)zlp_init,
	.ssthresh = (void *)zlp_ssthresh,
	.undo_cwnd = (void *)zlp_undo_cwnd,
	.cong_avoid = (void *)zlp_cong_avoid,
	.pkts_acked = (void *)zlp_pkts_acked,
	.name = "zoo_lp",
};
