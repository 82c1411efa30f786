// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_ktcp_hs_a80, bpf_ktcp_hs_a95: bpf_ktcp_hs (kyushu_highspeed.c, Kyushu-TCP over HighSpeed
 * TCP) with the reduction ratio α of the Kyushu paper's eq. (1), w2 = α·w1, chosen at build time:
 * the α sweep of its §5.1.1 (Figs. 6-8: α = 0.80, 0.90, 0.95; 0.90 is bpf_ktcp_hs itself).
 * bpfcc.py builds it with -DKTCP_SWEEP_NUM=N -DKTCP_SWEEP_DEN=D -DCC_VAR=<name>.
 *
 * Everything but α is kyushu.h and kyushu_highspeed.c: the hooks below are kyushu_highspeed.c's,
 * character for character (tests/test_papers.py compares them), with kyushu.h's congestion-event
 * rule replaced by ktcp_congestion_sweep, which differs from ktcp_congestion only in α. (kyushu.h
 * fixes α = 9/10 for the committed samples, whose provenance hashes cover its text.)
 *
 * Fixed point: w2 = ⌊N·w1/D⌋ (the kernel's snd_cwnd is whole packets).
 *
 * hscc-signals: phase w1 w2 tc b_ktcp sent snd_cwnd ssthresh hs_ai
 *   hs_ai: HighSpeed's table row (a(w) = hs_ai + 1)
 */
#include "highspeed.h"
#include "kyushu.h"

#if !defined(KTCP_SWEEP_NUM) || !defined(KTCP_SWEEP_DEN) || !defined(CC_VAR)
#error "build with -DKTCP_SWEEP_NUM=N -DKTCP_SWEEP_DEN=D -DCC_VAR=name (bpfcc.py)"
#endif
#define _STR(x) #x
#define STR(x) _STR(x)

/* kyushu.h's ktcp_congestion (§3 eq. (1) and Fig. 3) with α = KTCP_SWEEP_NUM / KTCP_SWEEP_DEN */
static __always_inline void ktcp_congestion_sweep(struct sock *sk, struct ktcp *k)
{
	k->prior_w1 = k->w1;
	k->prior_w2 = k->w2;
	k->prior_tc = k->tc;
	k->prior_flags = k->flags;
	k->w1 = tcp_sk(sk)->snd_cwnd;
	k->w2 = k->w1 * KTCP_SWEEP_NUM / KTCP_SWEEP_DEN;
	k->tc++;
	k->flags = KTCP_ARMED; /* any running period ends */
}
#define ktcp_congestion ktcp_congestion_sweep

struct ktcp_hs {
	struct hstcp_state hs;
	struct ktcp k;
};
_Static_assert(sizeof(struct ktcp_hs) <= ICSK_CA_PRIV_BYTES, "ktcp_hs state too large");

SEC("struct_ops")
void BPF_PROG(ktcp_hs_init, struct sock *sk)
{
	struct ktcp_hs *ca = inet_csk_ca(sk);

	hstcp_init(&ca->hs);
	ktcp_init(&ca->k);
	SIG(EV_INIT, "%u", KTCP_ENGAGE_ABOVE);
}

SEC("struct_ops")
void BPF_PROG(ktcp_hs_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ktcp_hs *ca = inet_csk_ca(sk);
	__u32 phase, sent, prev = tp->snd_cwnd;
	bool was_ca = !tcp_in_slow_start(tp);

	if (ktcp_hold(sk, &ca->k, &phase, &sent)) {
		KTCP_SIG(EV_ACK, phase, &ca->k, sent, ca->hs.ai);
		return;
	}
	hstcp_cong_avoid(sk, &ca->hs, acked);
	if (ktcp_maybe_start(sk, &ca->k, prev, was_ca))
		phase = KP_START;
	if (phase != KP_NORMAL)
		KTCP_SIG(EV_ACK, phase, &ca->k, sent, ca->hs.ai);
}

SEC("struct_ops")
__u32 BPF_PROG(ktcp_hs_ssthresh, struct sock *sk)
{
	struct ktcp_hs *ca = inet_csk_ca(sk);
	__u32 ss = hstcp_ssthresh(sk, &ca->hs);

	ktcp_congestion(sk, &ca->k);
	KTCP_SIG(EV_LOSS, KP_EVENT, &ca->k, 0, ca->hs.ai);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(ktcp_hs_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct ktcp_hs *ca = inet_csk_ca(sk);

	if (ev != CA_EVENT_LOSS)
		return;
	ktcp_timeout(&ca->k);
	KTCP_SIG(EV_CWND_EVENT, KP_RTO, &ca->k, 0, ca->hs.ai);
}

SEC("struct_ops")
__u32 BPF_PROG(ktcp_hs_undo_cwnd, struct sock *sk)
{
	struct ktcp_hs *ca = inet_csk_ca(sk);

	ktcp_undo(&ca->k);
	KTCP_SIG(EV_UNDO, KP_UNDO, &ca->k, 0, ca->hs.ai);
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CC_VAR = {
	.init = (void *)ktcp_hs_init,
	.ssthresh = (void *)ktcp_hs_ssthresh,
	.undo_cwnd = (void *)ktcp_hs_undo_cwnd,
	.cong_avoid = (void *)ktcp_hs_cong_avoid,
	.cwnd_event = (void *)ktcp_hs_cwnd_event,
	.name = STR(CC_VAR),
};
