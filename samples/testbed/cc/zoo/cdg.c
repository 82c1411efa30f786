// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_cdg: CAIA Delay-Gradient (CDG), ported to a BPF struct_ops congestion control from
 * Linux net/ipv4/tcp_cdg.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Paper: D. A. Hayes, G. Armitage, "Revisiting TCP congestion control using delay gradients",
 * IFIP Networking 2011.
 *
 * Rules as the module (defaults: window 8, backoff β = 0.7071, backoff factor 42, HyStart both
 * detectors, ineffectual-backoff threshold 5, shadow window on, loss tolerance off):
 *   - per round (first ACK beyond the round's snd_nxt): the gradients of the round's min and
 *     max RTT against the previous round's, summed over a moving window of 8 rounds (the sum
 *     extrapolated while the window fills); g = the min gradient when positive, else the max;
 *   - g > 0: back off with probability 1 − exp(−g·42·10⁻⁶) (g in µs), unless 5 backoffs in a
 *     row were ineffectual (no gradient ≤ −32 µs since): shadow window = max(shadow, cwnd),
 *     state BACKOFF, and the window is reduced to cwnd·β as a CWR episode;
 *   - growth as Reno, the shadow window growing with it; on a loss ssthresh = max(shadow/2 …,
 *     cwnd/2) (the shadow window, halved, is what a loss-based competitor would have);
 *   - HyStart in slow start: ACK train (ACKs ≤ 3 ms apart spanning more than half the min RTT)
 *     or delay (round min RTT > delay_min + delay_min/8 after 8 samples) ends slow start;
 *   - a delayed-ACK filter for the round's min/max RTT (Hayes 2010). Undo as Reno.
 *
 * Departures forced by BPF:
 *   - tcp_enter_cwr() is no kfunc: a backoff sets ssthresh = max(2, cwnd·β) and cwnd = ssthresh
 *     at once (Linux would spread the cut over one round with PRR, in the CWR state), then skips
 *     growth until the round's data is acknowledged (CWR's length), where it does what the
 *     module does at CA_EVENT_COMPLETE_CWR. The kernel's ca_state stays Open during it, so the
 *     truth tables show no CWR state for these cuts (the signal lines mark them);
 *   - the gradient window (8 × 8 bytes, kcalloc'd by the module) lives in BPF socket storage,
 *     as the socket's 104-byte congestion-control area cannot hold it;
 *   - random numbers from bpf_get_prandom_u32(); the 32-bit e^−x table kept as the module's;
 *   - the one signed division (the gradient's extrapolation) is done on the magnitude, with C's
 *     truncation toward zero (clang's BPF target has no signed divide).
 *
 * Signals: EV_ROUND at every backoff, EV_LOSS at every ssthresh call, EV_STATE at the end of a
 * backoff's CWR-like period:
 * hscc-signals: snd_cwnd ssthresh grad shadow_wnd state backoff_cnt rtt_min_us rtt_max_us
 */
#include "hscc_cc.h"

#define CDG_WINDOW 8
#define CDG_BACKOFF_BETA 724 /* 0.7071 · 1024 */
#define CDG_BACKOFF_FACTOR 42
#define CDG_HYSTART_ACK_TRAIN 1
#define CDG_HYSTART_DELAY 2
#define CDG_HYSTART_DETECT 3
#define CDG_USE_INEFF 5
#define CDG_USE_SHADOW 1

enum { CDG_UNKNOWN = 0, CDG_NONFULL = 1, CDG_FULL = 2, CDG_BACKOFF = 3 };

struct cdg_minmax {
	__s32 min;
	__s32 max;
};

struct zcdg {
	struct cdg_minmax rtt;
	struct cdg_minmax rtt_prev;
	struct cdg_minmax gsum;
	__u8 gfilled;
	__u8 tail;
	__u8 state;
	__u8 delack;
	__u32 rtt_seq;
	__u32 shadow_wnd;
	__u16 backoff_cnt;
	__u16 sample_cnt;
	__s32 delay_min;
	__u32 last_ack;
	__u32 round_start;
	__u32 cwr_high_seq; /* BPF: end of the CWR-like period after a backoff */
	__u8 in_cwr;
};
_Static_assert(sizeof(struct zcdg) <= ICSK_CA_PRIV_BYTES, "cdg state too large");

struct cdg_grads {
	struct cdg_minmax g[CDG_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cdg_grads);
} cdg_grads_map SEC(".maps");

/* signed division truncating toward zero, as C's: clang's BPF target has no signed divide */
static __always_inline __s32 sdiv_s32(__s32 a, __u32 b)
{
	__u32 q = (a < 0 ? (__u32)(-a) : (__u32)a) / b;

	return a < 0 ? -(__s32)q : (__s32)q;
}

static __always_inline bool mm_zero(const struct cdg_minmax *m)
{
	return m->min == 0 && m->max == 0;
}

/* exp(-ux·1e-6) · 2^32 (tcp_cdg.c nexp_u32): bits of ux/256 select table factors */
static __always_inline __u32 cdg_nexp_u32(__u32 ux)
{
	static const __u16 v[] = {
		65535, 65518, 65501, 65468, 65401, 65267, 65001, 64470, 63422,
		61378, 57484, 50423, 38795, 22965, 8047,  987,	 14,
	};
	__u32 msb = ux >> 8, res;
	int i;

	if (msb > 0xffff)
		return 0;
	res = 0xffffffffU - (ux & 0xff) * (0xffffffffU / 1000000);
#pragma unroll
	for (i = 1; i < 17; i++) { /* 16 bits of msb; a clear bit multiplies by 1 */
		__u32 y = (msb & 1) ? v[i] + 1U : 65536U;

		res = ((__u64)res * y) >> 16;
		msb >>= 1;
	}
	return res;
}

static __always_inline __s32 min_not_zero_s(__s32 a, __s32 b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

static __always_inline void cdg_hystart_update(struct sock *sk, struct zcdg *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->delay_min = min_not_zero_s(ca->delay_min, ca->rtt.min);
	if (ca->delay_min == 0)
		return;
	if (CDG_HYSTART_DETECT & CDG_HYSTART_ACK_TRAIN) {
		__u32 now_us = (__u32)tp->tcp_mstamp;

		if (ca->last_ack == 0 || !tcp_is_cwnd_limited(sk)) {
			ca->last_ack = now_us;
			ca->round_start = now_us;
		} else if (before(now_us, ca->last_ack + 3000)) {
			__u32 base_owd = max((__u32)ca->delay_min / 2U, 125U);

			ca->last_ack = now_us;
			if (after(now_us, ca->round_start + base_owd)) {
				tp->snd_ssthresh = tp->snd_cwnd;
				return;
			}
		}
	}
	if (CDG_HYSTART_DETECT & CDG_HYSTART_DELAY) {
		if (ca->sample_cnt < 8) {
			ca->sample_cnt++;
		} else {
			__s32 thresh = max((__u32)ca->delay_min + (__u32)ca->delay_min / 8U, 125U);

			if (ca->rtt.min > thresh)
				tp->snd_ssthresh = tp->snd_cwnd;
		}
	}
}

static __always_inline __s32 cdg_grad(struct zcdg *ca, struct cdg_grads *gr)
{
	__s32 gmin = ca->rtt.min - ca->rtt_prev.min, gmax = ca->rtt.max - ca->rtt_prev.max, grad;
	__u32 t = ca->tail & (CDG_WINDOW - 1);

	if (gr) {
		ca->gsum.min += gmin - gr->g[t].min;
		ca->gsum.max += gmax - gr->g[t].max;
		gr->g[t].min = gmin;
		gr->g[t].max = gmax;
		ca->tail = (t + 1) & (CDG_WINDOW - 1);
		gmin = ca->gsum.min;
		gmax = ca->gsum.max;
	}
	grad = gmin > 0 ? gmin : gmax;
	if (!ca->gfilled) { /* extrapolate while the window fills */
		if (!gr && CDG_WINDOW > 1)
			grad *= CDG_WINDOW;
		else if (ca->tail == 0)
			ca->gfilled = 1;
		else
			grad = sdiv_s32(grad * CDG_WINDOW, ca->tail);
	}
	if (gmin <= -32 || gmax <= -32) /* the last backoff was effectual */
		ca->backoff_cnt = 0;
	return grad;
}

SEC("struct_ops")
void BPF_PROG(zcdg_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zcdg *ca = inet_csk_ca(sk);

	bpf_sk_storage_get(&cdg_grads_map, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	ca->rtt_seq = tp->snd_nxt;
	ca->shadow_wnd = tp->snd_cwnd;
	SIG(EV_INIT, "%u", CDG_WINDOW);
}

SEC("struct_ops")
void BPF_PROG(zcdg_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zcdg *ca = inet_csk_ca(sk);
	__u32 prior, incr;

	if (ca->in_cwr) { /* the CWR-like period of a backoff (BPF: see the header) */
		if (!after(ack, ca->cwr_high_seq))
			return;
		ca->in_cwr = 0; /* CA_EVENT_COMPLETE_CWR */
		ca->state = CDG_UNKNOWN;
		ca->rtt_seq = tp->snd_nxt;
		ca->rtt_prev = ca->rtt;
		ca->rtt.min = ca->rtt.max = 0;
		SIG(EV_STATE, "%u %u %d %u %u %u %d %d", tp->snd_cwnd, tp->snd_ssthresh, 0, ca->shadow_wnd, ca->state,
		    ca->backoff_cnt, ca->rtt_prev.min, ca->rtt_prev.max);
	}
	if (tcp_in_slow_start(tp) && CDG_HYSTART_DETECT)
		cdg_hystart_update(sk, ca);

	if (after(ack, ca->rtt_seq) && !mm_zero(&ca->rtt)) {
		__s32 grad = 0;

		if (!mm_zero(&ca->rtt_prev))
			grad = cdg_grad(ca, bpf_sk_storage_get(&cdg_grads_map, sk, 0, 0));
		ca->rtt_seq = tp->snd_nxt;
		ca->rtt_prev = ca->rtt;
		ca->rtt.min = ca->rtt.max = 0;
		ca->last_ack = 0;
		ca->sample_cnt = 0;
		if (grad > 0 && bpf_get_prandom_u32() > cdg_nexp_u32(grad * CDG_BACKOFF_FACTOR)) {
			bool ineff = false;

			if (CDG_USE_INEFF) {
				ca->backoff_cnt++;
				if (ca->backoff_cnt > CDG_USE_INEFF)
					ineff = true;
			}
			if (!ineff) { /* tcp_cdg_backoff() */
				ca->shadow_wnd = max(ca->shadow_wnd, tp->snd_cwnd);
				ca->state = CDG_BACKOFF;
				tp->snd_ssthresh = max(2U, (tp->snd_cwnd * CDG_BACKOFF_BETA) >> 10);
				tp->snd_cwnd = tp->snd_ssthresh;
				tp->snd_cwnd_cnt = 0;
				ca->cwr_high_seq = tp->snd_nxt;
				ca->in_cwr = 1;
				SIG(EV_ROUND, "%u %u %d %u %u %u %d %d", tp->snd_cwnd, tp->snd_ssthresh, grad,
				    ca->shadow_wnd, ca->state, ca->backoff_cnt, ca->rtt_prev.min, ca->rtt_prev.max);
				return;
			}
		}
	}
	if (!tcp_is_cwnd_limited(sk)) {
		ca->shadow_wnd = min(ca->shadow_wnd, tp->snd_cwnd);
		return;
	}
	prior = tp->snd_cwnd;
	tcp_reno_cong_avoid(sk, ack, acked);
	incr = tp->snd_cwnd - prior;
	ca->shadow_wnd = max(ca->shadow_wnd, ca->shadow_wnd + incr);
}

SEC("struct_ops")
void BPF_PROG(zcdg_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zcdg *ca = inet_csk_ca(sk);

	if (sample->rtt_us <= 0)
		return;
	if (tp->sacked_out == 0) { /* delayed-ACK filter (Hayes 2010) */
		if (sample->pkts_acked == 1 && ca->delack) {
			ca->rtt.min = min(ca->rtt.min, sample->rtt_us);
			ca->delack--;
			return;
		} else if (sample->pkts_acked > 1 && ca->delack < 5) {
			ca->delack++;
		}
	}
	ca->rtt.min = min_not_zero_s(ca->rtt.min, sample->rtt_us);
	ca->rtt.max = max(ca->rtt.max, sample->rtt_us);
}

SEC("struct_ops")
__u32 BPF_PROG(zcdg_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zcdg *ca = inet_csk_ca(sk);
	__u32 ss;

	if (ca->state == CDG_BACKOFF) {
		ss = max(2U, (tp->snd_cwnd * CDG_BACKOFF_BETA) >> 10);
	} else {
		ca->shadow_wnd = min(ca->shadow_wnd >> 1, tp->snd_cwnd);
		if (CDG_USE_SHADOW)
			ss = max(max(2U, ca->shadow_wnd), tp->snd_cwnd >> 1);
		else
			ss = max(2U, tp->snd_cwnd >> 1);
	}
	ca->in_cwr = 0; /* a real reduction takes over */
	SIG(EV_LOSS, "%u %u %d %u %u %u %d %d", tp->snd_cwnd, ss, 0, ca->shadow_wnd, ca->state, ca->backoff_cnt,
	    ca->rtt.min, ca->rtt.max);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(zcdg_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zcdg *ca = inet_csk_ca(sk);
	struct cdg_grads *gr;

	switch (ev) {
	case CA_EVENT_CWND_RESTART:
		gr = bpf_sk_storage_get(&cdg_grads_map, sk, 0, 0);
		if (gr)
			__builtin_memset(gr, 0, sizeof(*gr));
		__builtin_memset(ca, 0, sizeof(*ca));
		ca->rtt_seq = tp->snd_nxt;
		ca->shadow_wnd = tp->snd_cwnd;
		break;
	case CA_EVENT_COMPLETE_CWR: /* a CWR the kernel entered itself (ECN) */
		ca->state = CDG_UNKNOWN;
		ca->rtt_seq = tp->snd_nxt;
		ca->rtt_prev = ca->rtt;
		ca->rtt.min = ca->rtt.max = 0;
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(zcdg_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_cdg = {
	.init = (void *)zcdg_init,
	.cong_avoid = (void *)zcdg_cong_avoid,
	.cwnd_event = (void *)zcdg_cwnd_event,
	.pkts_acked = (void *)zcdg_acked,
	.undo_cwnd = (void *)zcdg_undo_cwnd,
	.ssthresh = (void *)zcdg_ssthresh,
	.name = "zoo_cdg",
};
