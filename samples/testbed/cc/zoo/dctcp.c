// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_dctcp: DCTCP, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_dctcp.c and tcp_dctcp.h (kernel 6.x); the kernel's own BPF selftest
 * (tools/testing/selftests/bpf/progs/bpf_dctcp.c) shows the same struct_ops shape. Part of the
 * open-set zoo (no replay in hscc-trace). Papers: M. Alizadeh et al., "Data Center TCP (DCTCP)",
 * ACM SIGCOMM 2010; RFC 8257.
 *
 * Rules as the module:
 *   - ECN is required (TCP_CONG_NEEDS_ECN: the SYN asks for it whatever net.ipv4.tcp_ecn says);
 *   - once per window of data (snd_una passes the sequence recorded at the last update):
 *     F = CE-marked delivered / delivered over that window, α ← (1 − g)·α + g·F, g = 1/16, α in
 *     [0, 1024], starting at 1024;
 *   - on an ECE the kernel enters CWR and calls ssthresh: cwnd·(1 − α/2) (at least 2);
 *   - on a loss (recovery entered, or an RTO) ssthresh = cwnd/2 instead; undo restores the
 *     window of the last reduction;
 *   - as a receiver, the CE state machine ACKs at once when the CE state of arriving data
 *     changes, so ECE echoes the marks packet by packet (RFC 8257 §3.2);
 *   - Reno growth (tcp_reno_cong_avoid); without negotiated ECN, plain Reno (dctcp_reno).
 *
 * Departures forced by BPF: PLB (tcp_plb_*, off by default: net.ipv4.tcp_plb_enabled = 0) is not
 * ported; the Reno fallback is a flag inside this program instead of a second ops table; the
 * ECN mode test reads the RFC 3168 / AccECN bits of ecn_flags directly.
 *
 * Signals: EV_ROUND at every α update, EV_LOSS at every ssthresh call, EV_CWND_EVENT at a loss:
 * hscc-signals: snd_cwnd ssthresh alpha delivered delivered_ce fallback
 */
#include "hscc_cc.h"

#define DCTCP_MAX_ALPHA 1024U
#define DCTCP_SHIFT_G 4
#define DCTCP_ALPHA_ON_INIT DCTCP_MAX_ALPHA
#define DCTCP_ECN_MODE_ANY 0x11 /* TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN */
#define DCTCP_ECN_DEMAND_CWR 4	/* TCP_ECN_DEMAND_CWR */
#define TCP_CONG_NEEDS_ECN 0x2

static __always_inline __u32 min_not_zero_u(__u32 a, __u32 b)
{
	return a == 0 ? b : (b == 0 ? a : min(a, b));
}

struct zdctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 dctcp_alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
	__u32 fallback; /* no ECN negotiated: Reno */
};
_Static_assert(sizeof(struct zdctcp) <= ICSK_CA_PRIV_BYTES, "dctcp state too large");

static __always_inline void dctcp_reset(const struct tcp_sock *tp, struct zdctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(zdctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zdctcp *ca = inet_csk_ca(sk);

	if ((tp->ecn_flags & DCTCP_ECN_MODE_ANY) || sk->__sk_common.skc_state == TCP_LISTEN ||
	    sk->__sk_common.skc_state == TCP_CLOSE) {
		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->dctcp_alpha = min(DCTCP_ALPHA_ON_INIT, DCTCP_MAX_ALPHA);
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		ca->fallback = 0;
		dctcp_reset(tp, ca);
	} else {
		ca->fallback = 1;
	}
	SIG(EV_INIT, "%u", ca->fallback);
}

SEC("struct_ops")
__u32 BPF_PROG(zdctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zdctcp *ca = inet_csk_ca(sk);
	__u32 ss;

	if (ca->fallback)
		return tcp_reno_ssthresh(sk);
	ca->loss_cwnd = tp->snd_cwnd;
	ss = max(tp->snd_cwnd - ((tp->snd_cwnd * ca->dctcp_alpha) >> 11U), 2U);
	SIG(EV_LOSS, "%u %u %u %u %u %u", tp->snd_cwnd, ss, ca->dctcp_alpha, tp->delivered - ca->old_delivered,
	    tp->delivered_ce - ca->old_delivered_ce, ca->fallback);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(zdctcp_update_alpha, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zdctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return;
	if (!before(tp->snd_una, ca->next_seq)) { /* a window of data has been acknowledged */
		__u32 delivered = tp->delivered - ca->old_delivered;
		__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		__u32 alpha = ca->dctcp_alpha;

		alpha -= min_not_zero_u(alpha, alpha >> DCTCP_SHIFT_G);
		if (delivered_ce) {
			delivered_ce <<= (10 - DCTCP_SHIFT_G);
			delivered_ce /= max(1U, delivered);
			alpha = min(alpha + delivered_ce, DCTCP_MAX_ALPHA);
		}
		ca->dctcp_alpha = alpha;
		SIG(EV_ROUND, "%u %u %u %u %u %u", tp->snd_cwnd, tp->snd_ssthresh, alpha, delivered,
		    tp->delivered_ce - ca->old_delivered_ce, ca->fallback);
		dctcp_reset(tp, ca);
	}
}

static __always_inline void dctcp_react_to_loss(struct sock *sk, struct zdctcp *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max(tp->snd_cwnd >> 1U, 2U);
}

SEC("struct_ops")
void BPF_PROG(zdctcp_state, struct sock *sk, __u8 new_state)
{
	struct zdctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return;
	if (new_state == TCP_CA_Recovery && new_state != hscc_ca_state(sk))
		dctcp_react_to_loss(sk, ca);
}

/* tcp_dctcp.h: the receiver's CE state machine */
static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce_state == 1)
		tp->ecn_flags |= DCTCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~DCTCP_ECN_DEMAND_CWR;
}

static __always_inline void dctcp_ece_ack_update(struct sock *sk, enum tcp_ca_event evt, struct zdctcp *ca)
{
	__u32 new_ce_state = (evt == CA_EVENT_ECN_IS_CE) ? 1 : 0;

	if (ca->ce_state != new_ce_state) {
		/* the CE state changed: ACK now; a delayed ACK goes first with the old state */
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(sk, ca->prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	ca->ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

SEC("struct_ops")
void BPF_PROG(zdctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zdctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return;
	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, ca);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk, ca);
		SIG(EV_CWND_EVENT, "%u %u %u %u %u %u", tp->snd_cwnd, tp->snd_ssthresh, ca->dctcp_alpha, 0, 0,
		    ca->fallback);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(zdctcp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zdctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return tcp_reno_undo_cwnd(sk);
	return max(tp->snd_cwnd, ca->loss_cwnd);
}

SEC("struct_ops")
void BPF_PROG(zdctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_dctcp = {
	.init = (void *)zdctcp_init,
	.in_ack_event = (void *)zdctcp_update_alpha,
	.cwnd_event = (void *)zdctcp_cwnd_event,
	.ssthresh = (void *)zdctcp_ssthresh,
	.cong_avoid = (void *)zdctcp_cong_avoid,
	.undo_cwnd = (void *)zdctcp_undo_cwnd,
	.set_state = (void *)zdctcp_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "zoo_dctcp",
};
