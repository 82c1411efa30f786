// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_highspeed: HighSpeed TCP (RFC 3649) as Linux implements it (net/ipv4/tcp_highspeed.c), as a
 * BPF struct_ops congestion control (the testbed's kernel is built without tcp_highspeed). The
 * rules, their sources and the fixed-point losses are in highspeed.h.
 *
 * Signals: EV_ACK whenever the table row changes, EV_LOSS at every decrease:
 * hscc-signals: ai a_w md snd_cwnd ssthresh
 *   ai: table row (0 = standard TCP, at or below Low_Window 38); a_w = ai + 1 packets per RTT
 *   (per ACK on a delayed-ACK path); md = b(w)·256; at EV_LOSS ssthresh is the new value
 */
#include "highspeed.h"

_Static_assert(sizeof(struct hstcp_state) <= ICSK_CA_PRIV_BYTES, "highspeed state too large");

SEC("struct_ops")
void BPF_PROG(hs_init, struct sock *sk)
{
	struct hstcp_state *ca = inet_csk_ca(sk);

	hstcp_init(ca);
	/* tcp_highspeed.c also clamps snd_cwnd_clamp to 2^32/128 so that cwnd·md cannot overflow;
	 * BPF may not write snd_cwnd_clamp, and the testbed's windows stay below 10^4 packets. */
	SIG(EV_INIT, "%u", ca->ai);
}

SEC("struct_ops")
void BPF_PROG(hs_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp_state *ca = inet_csk_ca(sk);
	__u32 before_ai = ca->ai;

	hstcp_cong_avoid(sk, ca, acked);
	if (ca->ai != before_ai)
		SIG(EV_ACK, "%u %u %u %u %u", ca->ai, ca->ai + 1, ca->md, tp->snd_cwnd, tp->snd_ssthresh);
}

SEC("struct_ops")
__u32 BPF_PROG(hs_ssthresh, struct sock *sk)
{
	struct hstcp_state *ca = inet_csk_ca(sk);
	__u32 ss = hstcp_ssthresh(sk, ca);

	SIG(EV_LOSS, "%u %u %u %u %u", ca->ai, ca->ai + 1, ca->md, tcp_sk(sk)->snd_cwnd, ss);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(hs_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_highspeed = {
	.init = (void *)hs_init,
	.ssthresh = (void *)hs_ssthresh,
	.undo_cwnd = (void *)hs_undo_cwnd,
	.cong_avoid = (void *)hs_cong_avoid,
	.name = "bpf_highspeed",
};
