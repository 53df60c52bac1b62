#include "tessera_phone.h"

#include <cstring>
#include <new>
#include <string>

#include <phonenumbers/phonenumber.pb.h>
#include <phonenumbers/phonenumberutil.h>

using i18n::phonenumbers::PhoneNumber;
using i18n::phonenumbers::PhoneNumberUtil;

namespace {

// Copies `value` with its NUL into `buffer` if it fits; false if it does not.
template <size_t N>
bool copy_out(const std::string &value, char (&buffer)[N], size_t *length) {
    if (value.size() >= N) return false;
    std::memcpy(buffer, value.data(), value.size());
    buffer[value.size()] = '\0';
    *length = value.size();
    return true;
}

tessera_phone_status parse_error(PhoneNumberUtil::ErrorType error) {
    switch (error) {
    case PhoneNumberUtil::INVALID_COUNTRY_CODE_ERROR: return TESSERA_PHONE_INVALID_COUNTRY_CODE;
    case PhoneNumberUtil::TOO_SHORT_AFTER_IDD:
    case PhoneNumberUtil::TOO_SHORT_NSN: return TESSERA_PHONE_TOO_SHORT;
    case PhoneNumberUtil::TOO_LONG_NSN: return TESSERA_PHONE_TOO_LONG;
    case PhoneNumberUtil::NOT_A_NUMBER:
    default: return TESSERA_PHONE_NOT_A_NUMBER;
    }
}

// Why a parsed number is not valid, as precisely as its length tells.
tessera_phone_status invalid_reason(const PhoneNumberUtil &util, const PhoneNumber &number) {
    switch (util.IsPossibleNumberWithReason(number)) {
    case PhoneNumberUtil::INVALID_COUNTRY_CODE: return TESSERA_PHONE_INVALID_COUNTRY_CODE;
    case PhoneNumberUtil::TOO_SHORT: return TESSERA_PHONE_TOO_SHORT;
    case PhoneNumberUtil::TOO_LONG: return TESSERA_PHONE_TOO_LONG;
    default: return TESSERA_PHONE_INVALID_NUMBER;
    }
}

tessera_phone_status normalize(const char *input, size_t length, const char *default_region,
                               tessera_phone_result *result) {
    // The instance is created once (pthread_once in Debian's build) and only its const methods are
    // called; libphonenumber guards its one mutable part, a regular-expression cache, with a mutex.
    // So calls from several threads at once are safe (docs/design-notes.md#phone-numbers).
    const PhoneNumberUtil &util = *PhoneNumberUtil::GetInstance();
    // Without a default region, "ZZ" (libphonenumber's unknown region): only a number with its calling
    // code parses. A region given must be one with numbering data ("ZZ" and "001" are not).
    std::string region = "ZZ";
    if (default_region != nullptr && default_region[0] != '\0') {
        region = default_region;
        if (util.GetCountryCodeForRegion(region) == 0) return TESSERA_PHONE_UNKNOWN_REGION;
    }
    if (length > TESSERA_PHONE_MAX_INPUT) return TESSERA_PHONE_TOO_LONG;

    PhoneNumber number;
    PhoneNumberUtil::ErrorType error = util.Parse(std::string(input, length), region, &number);
    if (error != PhoneNumberUtil::NO_PARSING_ERROR) return parse_error(error);
    if (!util.IsValidNumber(number)) return invalid_reason(util, number);
    if (number.has_extension()) return TESSERA_PHONE_HAS_EXTENSION;

    std::string e164;
    util.Format(number, PhoneNumberUtil::E164, &e164);
    std::string number_region;
    util.GetRegionCodeForNumber(number, &number_region);
    tessera_phone_result out;
    // A valid number has at most 15 digits and its region two or three letters; checked all the same.
    if (!copy_out(e164, out.e164, &out.e164_length) || !copy_out(number_region, out.region, &out.region_length))
        return TESSERA_PHONE_FAILED;
    *result = out;
    return TESSERA_PHONE_OK;
}

}  // namespace

extern "C" tessera_phone_status tessera_phone_normalize(const char *input, size_t length,
                                                        const char *default_region, tessera_phone_result *result) {
    if ((input == nullptr && length > 0) || result == nullptr) return TESSERA_PHONE_FAILED;
    // No C++ exception may cross into the caller (std::bad_alloc is the only one the library raises).
    try {
        return normalize(input != nullptr ? input : "", length, default_region, result);
    } catch (...) {
        return TESSERA_PHONE_FAILED;
    }
}
