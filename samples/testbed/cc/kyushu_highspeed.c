// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_ktcp_hs: Kyushu-TCP over HighSpeed TCP (the Kyushu paper's own pairing, §2-§5: "we employ
 * HSTCP to apply the KTCP algorithm"), as a BPF struct_ops congestion control: the base is the
 * HighSpeed TCP of highspeed.h (RFC 3649 as Linux tcp_highspeed.c), the add-on is kyushu.h. The
 * rules and their fixed-point losses are in those two files. The α sweep of the paper's §5.1.1
 * (bpf_ktcp_hs_a80, bpf_ktcp_hs_a95) builds this file with eq. (1)'s α and the name from -D
 * (bpfcc.py VARIANTS).
 *
 * Signals: EV_LOSS at every congestion event, EV_CWND_EVENT at an RTO, EV_UNDO, EV_ACK on every
 * ACK of a non-aggressive period and at its start and end:
 * hscc-signals: phase w1 w2 tc b_ktcp sent snd_cwnd ssthresh hs_ai
 *   hs_ai: HighSpeed's table row (a(w) = hs_ai + 1)
 */
#include "highspeed.h"
#include "kyushu.h"

/* the struct_ops name: bpf_ktcp_hs, or an α-sweep build's (bpfcc.py VARIANTS: -DKTCP_HS_NAME=...) */
#ifndef KTCP_HS_NAME
#define KTCP_HS_NAME bpf_ktcp_hs
#endif
#define KTCP_HS_STR_(x) #x
#define KTCP_HS_STR(x) KTCP_HS_STR_(x)

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
struct tcp_congestion_ops KTCP_HS_NAME = {
	.init = (void *)ktcp_hs_init,
	.ssthresh = (void *)ktcp_hs_ssthresh,
	.undo_cwnd = (void *)ktcp_hs_undo_cwnd,
	.cong_avoid = (void *)ktcp_hs_cong_avoid,
	.cwnd_event = (void *)ktcp_hs_cwnd_event,
	.name = KTCP_HS_STR(KTCP_HS_NAME),
};
