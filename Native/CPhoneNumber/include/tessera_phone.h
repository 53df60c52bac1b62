#ifndef TESSERA_PHONE_H
#define TESSERA_PHONE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Phone numbers parsed, checked and written in E.164 by the system's libphonenumber (Debian's
/// libphonenumber-dev; docs/design-notes.md#phone-numbers). Every function may be called from several
/// threads at once.

/// Inputs longer than this many bytes are TESSERA_PHONE_TOO_LONG without being parsed (libphonenumber
/// refuses anything over 250 bytes anyway).
#define TESSERA_PHONE_MAX_INPUT 256

typedef enum __attribute__((enum_extensibility(closed))) tessera_phone_status {
    TESSERA_PHONE_OK = 0,
    /// Not a phone number at all (no digits, too few characters, a character out of place).
    TESSERA_PHONE_NOT_A_NUMBER = 1,
    /// No country calling code: no leading '+' and no default region, or an unknown code (+999).
    TESSERA_PHONE_INVALID_COUNTRY_CODE = 2,
    /// Too few digits for its country (or nothing after an international prefix).
    TESSERA_PHONE_TOO_SHORT = 3,
    /// Too many digits for its country, or an input over TESSERA_PHONE_MAX_INPUT bytes.
    TESSERA_PHONE_TOO_LONG = 4,
    /// Parsed, but no number its country assigns (libphonenumber's IsValidNumber is false).
    TESSERA_PHONE_INVALID_NUMBER = 5,
    /// The default region is not an ISO 3166 alpha-2 code libphonenumber has numbering data for.
    TESSERA_PHONE_UNKNOWN_REGION = 6,
    /// A valid number followed by an extension ("x 123"), which E.164 cannot carry.
    TESSERA_PHONE_HAS_EXTENSION = 7,
    /// A NULL argument, or the library failed (out of memory): never the input's fault.
    TESSERA_PHONE_FAILED = 8,
} tessera_phone_status;

/// A normalized number. Both strings are NUL-terminated; the lengths exclude the NUL.
typedef struct tessera_phone_result {
    /// E.164: '+', the country calling code and the national number, at most 15 digits in all.
    char e164[24];
    size_t e164_length;
    /// The number's region: ISO 3166 alpha-2 ("US", "GB"), or "001" for a number of a non-geographic
    /// calling code (+800, +882…).
    char region[4];
    size_t region_length;
} tessera_phone_result;

/// Parses `input` (UTF-8, `length` bytes, need not be NUL-terminated) and, when it is a valid number,
/// writes it to `*result`. `default_region` (NUL-terminated, upper-case ISO 3166 alpha-2, e.g. "US") is
/// the country of a number written without its calling code; NULL (or "") requires the calling code,
/// i.e. a leading '+'. `*result` is written only on TESSERA_PHONE_OK; nothing is allocated for the caller.
tessera_phone_status tessera_phone_normalize(const char *input, size_t length, const char *default_region,
                                             tessera_phone_result *result);

#ifdef __cplusplus
}
#endif

#endif
