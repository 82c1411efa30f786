// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_scalable: Scalable TCP, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_scalable.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Source: T. Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area Networks",
 * ACM CCR 33(2), 2003: a = 0.01 per ACK, b = 1/8.
 *
 * Rules as the module: slow start as Reno; in congestion avoidance one packet more per
 * min(cwnd, 100) ACKs (the paper's a = 0.01 per ACK), i.e. Reno below 100 packets and
 * +cwnd/100 per RTT above; on a congestion event
 * ssthresh = cwnd − cwnd/8 (at least 2). Undo as Reno.
 * Departures forced by BPF: none.
 *
 * hscc-signals: snd_cwnd ssthresh
 */
#include "hscc_cc.h"

#define SCALABLE_AI_CNT 100U
#define SCALABLE_MD_SHIFT 3

SEC("struct_ops")
void BPF_PROG(zscal_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, SCALABLE_AI_CNT), acked);
}

SEC("struct_ops")
__u32 BPF_PROG(zscal_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ss = max(tp->snd_cwnd - (tp->snd_cwnd >> SCALABLE_MD_SHIFT), 2U);

	SIG(EV_LOSS, "%u %u", tp->snd_cwnd, ss);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(zscal_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_scalable = {
	.ssthresh = (void *)zscal_ssthresh,
	.cong_avoid = (void *)zscal_cong_avoid,
	.undo_cwnd = (void *)zscal_undo_cwnd,
	.name = "zoo_scalable",
};
