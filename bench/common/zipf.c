/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zipf.c -- the YCSB zipfian rank and its constants (see zipf.h). Threads: any.
 * Owns: the zeta sums, eta and the rank draw.
 */
#include "zipf.h"

#include <math.h>

double
zipf_zeta_range(uint64_t from, uint64_t to, double theta)
{
    double z = 0;
    for (uint64_t i = to; i > from; i--) /* terms from+1 .. to, smallest first */
        z += 1.0 / pow((double)i, theta);
    return z;
}

#define ZETA_EXACT 1000000u
double
zipf_zeta_large(uint64_t n, double theta)
{
    uint64_t m = n < ZETA_EXACT ? n : ZETA_EXACT;
    double z = zipf_zeta_range(0, m, theta);
    if (n > m) {
        double a = (double)m, b = (double)n;
        double integral = fabs(theta - 1.0) < 1e-12
                              ? log(b / a)
                              : (pow(b, 1.0 - theta) - pow(a, 1.0 - theta)) / (1.0 - theta);
        double ends = (pow(b, -theta) - pow(a, -theta)) / 2.0;
        double d1 = -theta * (pow(b, -theta - 1.0) - pow(a, -theta - 1.0)) / 12.0;
        z += integral + ends + d1;
    }
    return z;
}

void
zipf_set_eta(zipf_gen *z)
{
    z->eta = (1.0 - pow(2.0 / (double)z->n, 1.0 - z->theta)) / (1.0 - z->zeta2 / z->zetan);
}

uint64_t
zipf_rank(const zipf_gen *z, double u, uint64_t n)
{
    double uz = u * z->zetan;
    if (uz < 1.0)
        return 0;
    if (uz < 1.0 + pow(0.5, z->theta))
        return n > 1 ? 1 : 0;
    double r = (double)n * pow(z->eta * u - z->eta + 1.0, z->alpha);
    if (!(r >= 0))
        r = 0;
    return r >= (double)n ? n - 1 : (uint64_t)r;
}
