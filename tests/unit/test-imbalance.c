/* SPDX-License-Identifier: MIT */
/* Unit tests of load imbalance: counting stacks per unit, spread, order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/imbalance.h"

#include "check.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_stats(void)
{
	const double v[] = {1, 3, 1, 0};
	struct imbalance_stats st;

	imbalance_stats(v, 4, &st);
	CHECK(NEAR(st.min, 0) && NEAR(st.max, 3) && NEAR(st.mean, 1.25));
	/* population: sqrt(((.25)^2 + 1.75^2 + .25^2 + 1.25^2) / 4) */
	CHECK(NEAR(st.stddev, sqrt((0.0625 + 3.0625 + 0.0625 + 1.5625) / 4)));
	CHECK(st.slowest == 1 && st.none == 1);
	imbalance_stats(v, 0, &st);
	CHECK(st.max == 0 && st.slowest == 0);
}

static void test_counting(void)
{
	struct imbalance im;
	uint32_t main_, work, rec, stack[4];
	uint32_t *order;

	imbalance_init(&im, 3);
	main_ = imbalance_function(&im, "<module>", "app.py");
	work = imbalance_function(&im, "work", "app.py");
	rec = imbalance_function(&im, "rec", "app.py");
	CHECK(imbalance_function(&im, "work", "app.py") == work);
	CHECK(imbalance_function(&im, "work", "other.py") != work);

	/* Unit 0: work once; unit 1: work 3 times; unit 2: only main. */
	stack[0] = main_;
	stack[1] = work;
	imbalance_add(&im, 0, stack, 2, 1.0);
	imbalance_add(&im, 1, stack, 2, 3.0);
	imbalance_add(&im, 2, stack, 1, 2.0);
	/* Recursion counts once in total, the leaf once in own time. */
	stack[1] = rec;
	stack[2] = rec;
	stack[3] = rec;
	imbalance_add(&im, 0, stack, 4, 0.5);
	imbalance_add(&im, 2, NULL, 0, 7.0);

	CHECK(NEAR(im.total[work * 3 + 0], 1) &&
	      NEAR(im.total[work * 3 + 1], 3) &&
	      NEAR(im.total[work * 3 + 2], 0));
	CHECK(NEAR(im.self[work * 3 + 1], 3) &&
	      NEAR(im.self[main_ * 3 + 2], 2) &&
	      NEAR(im.self[main_ * 3 + 0], 0));
	CHECK(NEAR(im.total[rec * 3 + 0], 0.5) &&
	      NEAR(im.self[rec * 3 + 0], 0.5));
	CHECK(NEAR(im.total[main_ * 3 + 0], 1.5));
	CHECK(NEAR(im.unit_total[0], 1.5) && NEAR(im.unit_total[1], 3) &&
	      NEAR(im.unit_total[2], 9));

	/* work: max 3 - mean 4/3; main: 3 - 6.5/3; rec: .5 - .5/3 */
	order = imbalance_order(&im);
	CHECK(order[0] == work && order[1] == main_ && order[2] == rec);
	free(order);
	imbalance_release(&im);
}

static void test_growth(void)
{
	struct imbalance im;
	char name[32];
	uint32_t id = 0, i;

	imbalance_init(&im, 2);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		id = imbalance_function(&im, name, "x.py");
		imbalance_add(&im, i % 2, &id, 1, 1.0);
	}
	CHECK(id == 999 && NEAR(im.total[999 * 2 + 1], 1) &&
	      NEAR(im.total[998 * 2 + 0], 1) && NEAR(im.total[998 * 2 + 1], 0));
	imbalance_release(&im);
}

int main(void)
{
	test_stats();
	test_counting();
	test_growth();
	return failed;
}
