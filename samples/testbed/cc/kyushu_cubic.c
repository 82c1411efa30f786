// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_ktcp_cubic: Kyushu-TCP over CUBIC (the Kyushu paper §4-§5: "CUBIC is also employed to
 * evaluate the performance of KTCP"), as a BPF struct_ops congestion control. The base is the
 * kernel's own CUBIC (net/ipv4/tcp_cubic.c), called through the kfuncs it exports to BPF
 * congestion controls (cubictcp_init, _cong_avoid, _recalc_ssthresh, _state, _cwnd_event, _acked):
 * its state (struct bictcp, 64 bytes) sits at the start of the socket's congestion-control area,
 * where those functions expect it, and KTCP's state follows it. The add-on is kyushu.h (rules
 * and fixed point there). While KTCP holds the window, cubictcp_cong_avoid is not called, but
 * CUBIC's epoch clock keeps running, so after the period CUBIC resumes where its curve is by then.
 *
 * Signals: EV_LOSS at every congestion event, EV_CWND_EVENT at an RTO, EV_UNDO, EV_ACK on every
 * ACK of a non-aggressive period and at its start and end:
 * hscc-signals: phase w1 w2 tc b_ktcp sent snd_cwnd ssthresh cubic_wmax
 *   cubic_wmax: CUBIC's last_max_cwnd (W_max, packets)
 */
#include "kyushu.h"

extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;

struct ktcp_cubic {
	struct bictcp cubic; /* tcp_cubic.c's state, where cubictcp_* look for it */
	struct ktcp k;
};
_Static_assert(sizeof(struct ktcp_cubic) <= ICSK_CA_PRIV_BYTES, "ktcp_cubic state too large");

SEC("struct_ops")
void BPF_PROG(ktcp_cubic_init, struct sock *sk)
{
	struct ktcp_cubic *ca = inet_csk_ca(sk);

	cubictcp_init(sk);
	ktcp_init(&ca->k);
	SIG(EV_INIT, "%u", KTCP_ENGAGE_ABOVE);
}

SEC("struct_ops")
void BPF_PROG(ktcp_cubic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ktcp_cubic *ca = inet_csk_ca(sk);
	__u32 phase, sent, prev = tp->snd_cwnd;
	bool was_ca = !tcp_in_slow_start(tp);

	if (ktcp_hold(sk, &ca->k, &phase, &sent)) {
		KTCP_SIG(EV_ACK, phase, &ca->k, sent, ca->cubic.last_max_cwnd);
		return;
	}
	cubictcp_cong_avoid(sk, ack, acked);
	if (ktcp_maybe_start(sk, &ca->k, prev, was_ca))
		phase = KP_START;
	if (phase != KP_NORMAL)
		KTCP_SIG(EV_ACK, phase, &ca->k, sent, ca->cubic.last_max_cwnd);
}

SEC("struct_ops")
__u32 BPF_PROG(ktcp_cubic_ssthresh, struct sock *sk)
{
	struct ktcp_cubic *ca = inet_csk_ca(sk);
	__u32 ss = cubictcp_recalc_ssthresh(sk);

	ktcp_congestion(sk, &ca->k);
	KTCP_SIG(EV_LOSS, KP_EVENT, &ca->k, 0, ca->cubic.last_max_cwnd);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(ktcp_cubic_state, struct sock *sk, __u8 new_state)
{
	cubictcp_state(sk, new_state);
}

SEC("struct_ops")
void BPF_PROG(ktcp_cubic_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct ktcp_cubic *ca = inet_csk_ca(sk);

	cubictcp_cwnd_event(sk, ev);
	if (ev != CA_EVENT_LOSS)
		return;
	ktcp_timeout(&ca->k);
	KTCP_SIG(EV_CWND_EVENT, KP_RTO, &ca->k, 0, ca->cubic.last_max_cwnd);
}

SEC("struct_ops")
void BPF_PROG(ktcp_cubic_acked, struct sock *sk, const struct ack_sample *sample)
{
	cubictcp_acked(sk, sample);
}

SEC("struct_ops")
__u32 BPF_PROG(ktcp_cubic_undo_cwnd, struct sock *sk)
{
	struct ktcp_cubic *ca = inet_csk_ca(sk);

	ktcp_undo(&ca->k);
	KTCP_SIG(EV_UNDO, KP_UNDO, &ca->k, 0, ca->cubic.last_max_cwnd);
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_ktcp_cubic = {
	.init = (void *)ktcp_cubic_init,
	.ssthresh = (void *)ktcp_cubic_ssthresh,
	.undo_cwnd = (void *)ktcp_cubic_undo_cwnd,
	.cong_avoid = (void *)ktcp_cubic_cong_avoid,
	.set_state = (void *)ktcp_cubic_state,
	.cwnd_event = (void *)ktcp_cubic_cwnd_event,
	.pkts_acked = (void *)ktcp_cubic_acked,
	.name = "bpf_ktcp_cubic",
};
