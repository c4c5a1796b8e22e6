/* Built-in driver programs (see drivers.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_DRIVERS_H
#define ASB_CODEINTERP_DRIVERS_H

extern const char ci_node_driver[];
extern const char ci_bash_init[];
/* Embedded at build time (embed.cmake): the silent cell every python kernel
 * runs first (startup/python_startup.py: E2B's IPython settings, the chart,
 * data and JSON formatters, the PIL hooks) and the matplotlibrc the kernels
 * get through MATPLOTLIBRC (templates/code-interpreter/matplotlibrc). */
extern const char ci_python_startup[];
extern const char ci_matplotlibrc[];
/* The java driver (java/JavaDriver.java) compiled into a jar, when the
 * build had a JDK (CI_HAVE_JAVA). */
#if CI_HAVE_JAVA
extern const char ci_java_driver_jar[];
extern const unsigned long ci_java_driver_jar_size;
#endif

#endif
