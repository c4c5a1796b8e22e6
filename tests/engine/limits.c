#include "common.h"
#include "testing.h"
TEST(stub) { CHECK(1); }
int main(void) { RUN(stub); TEST_MAIN_END(); }
